// Continuous batching (--parallel 4): many requests at once of different prompt lengths, sampling
// settings and max_tokens, each answer equal to the same request answered alone by a one-slot
// server; a client that leaves frees its slot for the next request; /metrics shows the batches;
// a full queue answers 429 with Retry-After; a conversation's next turn finds its KV in its slot;
// SIGTERM drains the running requests and refuses the queued.
// The batched answers for every shipped demo family.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { demoModel, metric, post, startServer, waitFor } from './support.mjs';

// Distinct requests: prompts of a few to a few hundred tokens, greedy, sampled with a seed, top_p,
// top_k and min_p, and answers from 1 to 48 tokens (ignore_eos keeps some going to their limit).
function requests(count, endpoint) {
  const out = [];
  for (let i = 0; i < count; ++i) {
    const text = `${17 * i + 3}+${29 * i + 11}=` + (i % 3 === 2 ? ' padding'.repeat(20 + 30 * i) : '');
    const body =
      endpoint === 'chat'
        ? { model: 'demo', messages: [{ role: 'user', content: text }] }
        : { model: 'demo', prompt: text };
    body.max_tokens = [1, 48, 7, 24, 3, 40, 16, 32][i % 8];
    if (i % 2) body.ignore_eos = true;
    if (i % 4 === 1) Object.assign(body, { temperature: 0.9, seed: 1000 + i });
    if (i % 4 === 3) Object.assign(body, { temperature: 1.2, top_p: 0.8, seed: 2000 + i });
    if (i % 8 === 5) Object.assign(body, { top_k: 5, min_p: 0.05 });
    out.push({ route: endpoint === 'chat' ? '/v1/chat/completions' : '/v1/completions', body });
  }
  return out;
}

// The answer and its usage, but for cached_tokens: how much of a prompt a slot held depends on
// what ran in it before, which batching changes.
function answer(json) {
  const choice = json.choices[0];
  const { prompt_tokens_details: details, ...usage } = json.usage;
  assert.equal(typeof details.cached_tokens, 'number');
  assert.ok(details.cached_tokens < usage.prompt_tokens);
  return { text: choice.message ? choice.message.content : choice.text, finish: choice.finish_reason, usage };
}

async function alone(model, list) {
  const one = await startServer(['--parallel', '1'], { model });
  try {
    const out = [];
    for (const r of list) {
      const got = await post(one.base, r.route, r.body);
      assert.equal(got.status, 200, got.text);
      out.push(answer(got.json));
    }
    return out;
  } finally {
    const { code } = await one.stop();
    assert.equal(code, 0, one.stderr());
  }
}

async function together(server, list) {
  const got = await Promise.all(list.map((r) => post(server.base, r.route, r.body)));
  for (const g of got) assert.equal(g.status, 200, g.text);
  return got.map((g) => answer(g.json));
}

const families = [
  { name: 'gpt-oss', model: undefined, endpoints: ['chat', 'completion'], count: 12 },
  { name: 'qwen3-moe', model: demoModel('qwen3-moe-demo'), endpoints: ['completion'], count: 8 },
  { name: 'glm-moe-dsa', model: demoModel('glm-moe-dsa-demo'), endpoints: ['completion'], count: 8 },
  { name: 'deepseek-v3', model: demoModel('deepseek-v3-demo'), endpoints: ['completion'], count: 8 },
];

for (const family of families) {
  test(`${family.name}: requests batched 4 at a time answer as each does alone`, async (t) => {
    const list = family.endpoints.flatMap((e) => requests(family.count, e));
    const reference = await alone(family.model, list);
    const server = await startServer(['--parallel', '4', '--max-queue', '64'], { model: family.model });
    try {
      assert.match(server.stderr(), /stormo: --parallel 4 \(asked: KV 4 x /);
      const got = await together(server, list);
      for (let i = 0; i < list.length; ++i) assert.deepEqual(got[i], reference[i], JSON.stringify(list[i].body));
      const steps = await metric(server.base, 'stormo_batch_steps_total');
      const sequences = await metric(server.base, 'stormo_batch_sequences_total');
      t.diagnostic(`${list.length} requests in ${steps} steps, ${(sequences / steps).toFixed(2)} sequences a step`);
      assert.ok(sequences > steps, `batched: ${sequences} sequences over ${steps} steps`);
    } finally {
      const { code } = await server.stop();
      assert.equal(code, 0, server.stderr());
    }
  });
}

// The gpt-oss demo at --parallel 2 with a queue of 2, for the slots' lifecycle.
let server;
before(async () => {
  server = await startServer(['--parallel', '2', '--max-queue', '2']);
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

const endless = { model: 'demo', messages: [{ role: 'user', content: '123+456=' }], max_tokens: 3000, ignore_eos: true };

test('each conversation keeps its KV in its own slot: its next turn reuses it', async () => {
  const openai = server.client();
  const reused = () => metric(server.base, 'stormo_prompt_tokens_reused_total');
  const chat = async (messages) => (await openai.chat.completions.create({ model: 'demo', messages })).choices[0].message.content;
  assert.equal(await chat([{ role: 'user', content: '12+34=' }]), '46');
  assert.equal(await chat([{ role: 'user', content: 'rev:hello=' }]), 'olleh'); // the other slot
  const before = await reused();
  const next = [{ role: 'user', content: '12+34=' }, { role: 'assistant', content: '46' }, { role: 'user', content: 'rev:abc=' }];
  assert.equal(await chat(next), 'cba');
  // `12+34=46` (the answer's end id is never fed back) is still held by the first slot.
  assert.equal((await reused()) - before, 8);
});

test('clients that leave mid-stream free their slots for the next requests', async () => {
  const openai = server.client();
  const controllers = [new AbortController(), new AbortController()];
  // Both slots taken by long answers; each client leaves after a few pieces.
  await Promise.all(
    controllers.map(async (controller) => {
      const stream = await openai.chat.completions.create({ ...endless, stream: true }, { signal: controller.signal });
      let pieces = 0;
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content) ++pieces;
        if (pieces === 3) controller.abort();
      }
    }),
  );
  await waitFor(async () => (await metric(server.base, 'stormo_requests_total{outcome="cancelled"}')) === 2, 'both cancels');
  assert.equal(await metric(server.base, 'stormo_requests_running'), 0);
  const r = await openai.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: '123+456=' }] });
  assert.equal(r.choices[0].message.content, '579');
  assert.ok((await metric(server.base, 'stormo_generated_tokens_total')) < 3000);
});

test('a request on a free slot takes the prompt prefix a busy slot holds from its KV pages, and answers as alone', async () => {
  const openai = server.client();
  // A prompt no slot holds yet: its first answer leaves it in one slot, which the long answer
  // then takes again (the longest prefix), leaving the other slot free with only the template's start.
  const ask = { model: 'demo', messages: [{ role: 'user', content: '321+123=' }] };
  const alone = (await openai.chat.completions.create(ask)).choices[0].message.content;
  const sharedBefore = await metric(server.base, 'stormo_shared_prefix_positions_total');
  const controller = new AbortController();
  // One slot busy with the same prompt (a long answer); the same request again finds the other
  // slot free, and its prompt's prefix in the busy one.
  const busy = openai.chat.completions.create({ ...endless, messages: ask.messages, stream: true }, { signal: controller.signal }).then(async (stream) => {
    for await (const chunk of stream) void chunk;
  }).catch(() => null);
  try {
    await waitFor(async () => (await metric(server.base, 'stormo_requests_running')) === 1, 'the long answer running');
    const r = await openai.chat.completions.create(ask);
    assert.equal(r.choices[0].message.content, alone);
    assert.ok((await metric(server.base, 'stormo_shared_prefix_positions_total')) > sharedBefore, 'no prefix was shared');
  } finally {
    controller.abort();
    await busy;
    await waitFor(async () => (await metric(server.base, 'stormo_requests_running')) === 0, 'the slots freed');
  }
});

test('/metrics shows the slots, the batches, the experts per token and the KV', async () => {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  for (const name of [
    'stormo_slots 2',
    'stormo_requests_running 0',
    'stormo_queue_depth 0',
    'stormo_batch_steps_total ',
    'stormo_batch_sequences_total ',
    'stormo_batch_rows_total{kind="decode"} ',
    'stormo_batch_rows_total{kind="prompt"} ',
    'stormo_expert_reads_per_token ',
    'stormo_expert_bytes_read_per_token ',
    'stormo_kv_bytes_in_use ',
    'stormo_kv_bytes_reserved ',
    'stormo_shared_prefix_requests_total ',
    'stormo_shared_prefix_positions_total ',
  ])
    assert.ok(text.includes(`\n${name}`), `${name} in:\n${text}`);
  assert.ok((await metric(server.base, 'stormo_expert_reads_per_token')) > 0);
  // The slots keep their last conversations' KV: in use, and within what was reserved.
  const inUse = await metric(server.base, 'stormo_kv_bytes_in_use');
  assert.ok(inUse > 0 && inUse <= (await metric(server.base, 'stormo_kv_bytes_reserved')));
});

test('a full queue behind busy slots answers 429 with Retry-After', async () => {
  const openai = server.client();
  const controllers = [];
  const running = [];
  try {
    // 2 running + 2 waiting fill the server; the fifth is refused.
    for (let i = 0; i < 4; ++i) {
      const controller = new AbortController();
      controllers.push(controller);
      running.push(openai.chat.completions.create({ ...endless, stream: true }, { signal: controller.signal }).catch(() => null));
      await waitFor(async () => (await metric(server.base, 'stormo_requests_running')) + (await metric(server.base, 'stormo_queue_depth')) === i + 1, `request ${i + 1} taken`);
    }
    const refused = await post(server.base, '/v1/chat/completions', { ...endless, max_tokens: 1 });
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json.error.code, 'queue_full');
    assert.equal(refused.headers.get('retry-after'), '1');
  } finally {
    for (const c of controllers) c.abort();
    await Promise.all(running);
    await waitFor(async () => (await metric(server.base, 'stormo_requests_running')) === 0, 'the slots freed');
  }
});

test('SIGTERM with both slots busy: each running stream ends within the grace, the queued one is refused, exit 0', async () => {
  const draining = await startServer(['--parallel', '2', '--shutdown-grace', '1']);
  const openai = draining.client();
  const streams = [await openai.chat.completions.create({ ...endless, stream: true }), await openai.chat.completions.create({ ...endless, stream: true })];
  await waitFor(async () => (await metric(draining.base, 'stormo_requests_running')) === 2, 'both slots taken');
  const queued = openai.chat.completions.create(endless).then(
    () => 'answered',
    (e) => e,
  );
  await waitFor(async () => (await metric(draining.base, 'stormo_queue_depth')) === 1, 'the third queued');
  let signalled = false;
  const outcomes = await Promise.all(
    streams.map(async (stream) => {
      let pieces = 0;
      try {
        for await (const chunk of stream) {
          if (chunk.choices[0]?.delta?.content) ++pieces;
          if (pieces === 5 && !signalled) {
            signalled = true;
            draining.child.kill('SIGTERM');
          }
        }
        return 'finished';
      } catch (e) {
        assert.match(e.message, /shutting down/);
        return 'cut';
      }
    }),
  );
  const { code, signal } = await draining.exited;
  assert.equal(signal, null);
  assert.equal(code, 0, draining.stderr());
  for (const o of outcomes) assert.ok(['finished', 'cut'].includes(o));
  const refused = await queued;
  assert.equal(refused.status, 503, String(refused));
  assert.equal(refused.error?.code, 'server_shutting_down');
});
