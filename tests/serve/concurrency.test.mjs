// One compute stream shared by many clients: 8 clients x 5 requests at once, each answered or
// refused with 429 (never lost, never mixed up), every answer equal to the same request run alone.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { startServer } from './support.mjs';

let server;
before(async () => {
  server = await startServer(['--max-queue', '4']);
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

const CLIENTS = 8;
const PER_CLIENT = 5;

// Distinct requests: additions, reversals and sorts, some greedy, some sampled with a seed.
function request(client, i) {
  const a = 11 * client + 3 * i;
  const b = 7 * i + 100 * (client % 3);
  const tasks = [`${a}+${b}=`, `rev:${'abcdefg'.slice(0, 2 + ((client + i) % 5))}=`, `sort:${'gfedcba'.slice(0, 2 + (i % 5))}=`];
  const params = { model: 'demo', messages: [{ role: 'user', content: tasks[(client + i) % 3] }], max_tokens: 16 };
  if ((client + i) % 2) Object.assign(params, { temperature: 0.9, seed: client * 100 + i });
  return params;
}

test('8 clients x 5 requests: answered or 429, each equal to the request run alone', async (t) => {
  const openai = server.client();
  const alone = new Map();
  for (let c = 0; c < CLIENTS; ++c)
    for (let i = 0; i < PER_CLIENT; ++i) {
      const r = await openai.chat.completions.create(request(c, i));
      alone.set(`${c}/${i}`, r.choices[0].message.content);
    }

  let answered = 0;
  let refused = 0;
  const ids = new Set();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      const mine = server.client(); // one connection pool per client
      for (let i = 0; i < PER_CLIENT; ++i) {
        const params = request(c, i);
        const stream = (c + i) % 2 === 0;
        try {
          let content = '';
          if (stream) {
            for await (const chunk of await mine.chat.completions.create({ ...params, stream: true })) {
              ids.add(chunk.id);
              for (const choice of chunk.choices) content += choice.delta.content ?? '';
            }
          } else {
            const r = await mine.chat.completions.create(params);
            ids.add(r.id);
            content = r.choices[0].message.content;
          }
          assert.equal(content, alone.get(`${c}/${i}`), `client ${c} request ${i}`);
          ++answered;
        } catch (e) {
          if (e.status !== 429) throw e;
          assert.equal(e.error?.code ?? e.code, 'queue_full');
          assert.ok(e.headers.get('retry-after'), 'Retry-After is set');
          ++refused;
        }
      }
    }),
  );
  t.diagnostic(`${answered} answered, ${refused} refused with 429`);
  assert.equal(answered + refused, CLIENTS * PER_CLIENT, 'none lost');
  assert.equal(ids.size, answered, 'each answer has its own id');
  assert.ok(answered >= CLIENTS, `${answered} answered, ${refused} refused`);
});
