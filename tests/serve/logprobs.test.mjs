// logprobs on both endpoints through the official OpenAI client, streamed and not: the values are
// the log-softmax of the full head's raw logits (checked against `stormo logits` teacher-forced
// over the same ids, in double), before temperature; the top alternatives in order; streamed
// entries add up to the whole answer's; out-of-range values refused naming the field.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { DEMO, STORMO, assertErrorShape, post, startServer } from './support.mjs';

let server;
let client;
before(async () => {
  server = await startServer();
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

function run(args) {
  const r = spawnSync(STORMO, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, `stormo ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

// A float32 .npy file (version 1.0, C order) as { shape, data }.
function readNpy(file) {
  const bytes = fs.readFileSync(file);
  const headerLength = bytes.readUInt16LE(8);
  const header = bytes.subarray(10, 10 + headerLength).toString('latin1');
  assert.match(header, /'descr': '<f4'/);
  const shape = /'shape': \(([^)]*)\)/.exec(header)[1].split(',').filter((s) => s.trim()).map(Number);
  const start = 10 + headerLength;
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset + start, bytes.byteOffset + bytes.length));
  return { shape, data };
}

// The log-softmax of one row of raw logits, in double.
function logSoftmax(row) {
  let largest = -Infinity;
  for (const x of row) largest = Math.max(largest, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - largest);
  const logSum = Math.log(sum);
  return Array.from(row, (x) => x - largest - logSum);
}

// The teacher-forced reference for a completion: the prompt's ids (/tokenize, as the server
// encodes it), the generated ids (`stormo generate`, the same tokens: greedy, or the same seed),
// and each generated position's log-softmax row from `stormo logits`.
async function reference(prompt, maxTokens, sampling = []) {
  const { json } = await post(server.base, '/tokenize', { content: prompt });
  const promptIds = json.tokens;
  const generated = run(['generate', '--model', DEMO, '--ids', promptIds.join(','), '--max-tokens', String(maxTokens), ...sampling])
    .trim().split(/\s+/).map(Number);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stormo-logprobs-'));
  try {
    const out = path.join(dir, 'logits.npy');
    const ids = [...promptIds, ...generated.slice(0, -1)];
    run(['logits', '--model', DEMO, '--ids', ids.join(','), '--out', out]);
    const { shape, data } = readNpy(out);
    const vocab = shape[1];
    const rows = generated.map((_, i) => logSoftmax(data.subarray((promptIds.length - 1 + i) * vocab, (promptIds.length + i) * vocab)));
    return { generated, rows };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));

test('completions: logprobs N gives each token, its logprob, its top N and its text offset, exactly', async () => {
  const prompt = '123+456=';
  const r = await client.completions.create({ model: 'gpt-oss-demo', prompt, max_tokens: 6, logprobs: 5 });
  const choice = r.choices[0];
  assert.equal(choice.text, '579');
  const lp = choice.logprobs;
  const { generated, rows } = await reference(prompt, 6);
  // 5, 7, 9 and the stop id, which is not part of the answer.
  assert.equal(generated.length, 4);
  assert.equal(lp.tokens.length, 3);
  assert.deepEqual(lp.tokens, ['5', '7', '9']);
  assert.deepEqual(lp.text_offset, [0, 1, 2]);
  for (let i = 0; i < lp.tokens.length; ++i) {
    const row = rows[i];
    assert.ok(close(lp.token_logprobs[i], row[generated[i]]), `token ${i}: ${lp.token_logprobs[i]} vs ${row[generated[i]]}`);
    // (A JS object lists keys that look like integers first, in numeric order: sort by value.)
    const top = Object.values(lp.top_logprobs[i]).sort((a, b) => b - a);
    const expected = [...row].sort((a, b) => b - a).slice(0, 5);
    assert.equal(top.length, 5);
    top.forEach((v, k) => assert.ok(close(v, expected[k]), `token ${i} top ${k}: ${v} vs ${expected[k]}`));
    // Greedy: the token chosen is the most likely one.
    assert.equal(lp.token_logprobs[i], top[0]);
    assert.equal(lp.top_logprobs[i][lp.tokens[i]], lp.token_logprobs[i]);
  }
});

test('logprobs are those of the raw logits, before temperature', async () => {
  const prompt = 'rev:hello=';
  const sampling = { temperature: 1.7, seed: 5 };
  const r = await client.completions.create({ model: 'gpt-oss-demo', prompt, max_tokens: 5, logprobs: 0, ignore_eos: true, ...sampling });
  const lp = r.choices[0].logprobs;
  const { generated, rows } = await reference(prompt, 5, ['--temperature', '1.7', '--seed', '5']);
  assert.equal(lp.token_logprobs.length, 5);
  for (let i = 0; i < 5; ++i) {
    assert.ok(close(lp.token_logprobs[i], rows[i][generated[i]]), `token ${i}: ${lp.token_logprobs[i]} vs ${rows[i][generated[i]]}`);
    assert.deepEqual(lp.top_logprobs[i], {});
  }
});

test('completions streamed: the chunks carry the same logprobs, offsets running on', async () => {
  const body = { model: 'gpt-oss-demo', prompt: 'rev:hello=', max_tokens: 8, logprobs: 2 };
  const whole = (await client.completions.create(body)).choices[0].logprobs;
  const stream = await client.completions.create({ ...body, stream: true });
  const got = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  for await (const chunk of stream)
    for (const choice of chunk.choices)
      if (choice.logprobs) for (const key of Object.keys(got)) got[key].push(...choice.logprobs[key]);
  assert.deepEqual(got, whole);
  assert.equal(whole.tokens.join(''), 'olleh');
});

test('chat: logprobs true with top_logprobs lists content entries with bytes, streamed the same', async () => {
  const body = { model: 'gpt-oss-demo', messages: [{ role: 'user', content: '123+456=' }], logprobs: true, top_logprobs: 3 };
  const r = await client.chat.completions.create(body);
  assert.equal(r.choices[0].message.content, '579');
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, 3);
  for (const entry of content) {
    assert.equal(typeof entry.token, 'string');
    assert.deepEqual(entry.bytes, [...Buffer.from(entry.token, 'utf8')]);
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 3);
    assert.equal(entry.top_logprobs[0].token, entry.token);  // greedy
    assert.equal(entry.top_logprobs[0].logprob, entry.logprob);
    assert.ok(entry.top_logprobs[0].logprob >= entry.top_logprobs[1].logprob);
    assert.ok(entry.top_logprobs[1].logprob >= entry.top_logprobs[2].logprob);
    const mass = entry.top_logprobs.reduce((s, t) => s + Math.exp(t.logprob), 0);
    assert.ok(mass <= 1 + 1e-12);
  }
  assert.equal(content.map((e) => e.token).join(''), '579');

  const stream = await client.chat.completions.create({ ...body, stream: true });
  const streamed = [];
  for await (const chunk of stream) for (const choice of chunk.choices) if (choice.logprobs) streamed.push(...choice.logprobs.content);
  assert.deepEqual(streamed, content);

  // Without logprobs the field stays null.
  const plain = await client.chat.completions.create({ model: 'gpt-oss-demo', messages: body.messages });
  assert.equal(plain.choices[0].logprobs, null);
});

test('out-of-range logprobs are refused with a 400 naming the field', async () => {
  const messages = [{ role: 'user', content: '1+1=' }];
  const cases = [
    ['/v1/chat/completions', { messages, logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
    ['/v1/chat/completions', { messages, logprobs: true, top_logprobs: -1 }, 'top_logprobs'],
    ['/v1/chat/completions', { messages, top_logprobs: 2 }, 'top_logprobs'],
    ['/v1/chat/completions', { messages, logprobs: 'yes' }, 'logprobs'],
    ['/v1/completions', { prompt: '1+1=', logprobs: 21 }, 'logprobs'],
    ['/v1/completions', { prompt: '1+1=', logprobs: -1 }, 'logprobs'],
    ['/v1/completions', { prompt: '1+1=', logprobs: 2.5 }, 'logprobs'],
  ];
  for (const [route, body, param] of cases) {
    const r = await post(server.base, route, body);
    assert.equal(r.status, 400, `${route} ${JSON.stringify(body)}: ${r.text}`);
    assertErrorShape(assert, r.json, param);
  }
});
