// What clients read besides the answer, through the official OpenAI client and raw HTTP: `created`
// is when each response is made, the model by its id (--alias), embeddings refused by name, CORS
// (--cors-origin: the headers and the preflight; none without the flag), one log line per request
// in text or JSON, and usage.prompt_tokens_details.cached_tokens from the slot's KV prefix on
// both endpoints.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { DEMO, STORMO, assertErrorShape, post, startServer, waitFor } from './support.mjs';

const ALIAS = 'stormo/demo-tiny';
let server;
let client;
before(async () => {
  server = await startServer(['--alias', ALIAS, '--cors-origin', 'https://app.example', '--api-key', 'k3y', '--parallel', '1']);
  client = server.client({ apiKey: 'k3y' });
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

const auth = { authorization: 'Bearer k3y' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('created is when each response is made, streamed or not', async () => {
  const listed = await client.models.list();
  const started = listed.data[0].created;
  await sleep(1100);
  const before = Math.floor(Date.now() / 1000);
  const r = await client.chat.completions.create({ model: ALIAS, messages: [{ role: 'user', content: '123+456=' }] });
  const afterwards = Math.ceil(Date.now() / 1000);
  assert.ok(r.created >= before && r.created <= afterwards, `created ${r.created} not in [${before}, ${afterwards}]`);
  assert.ok(r.created > started, 'not the server start time');
  const completion = await client.completions.create({ model: ALIAS, prompt: '12+34=' });
  assert.ok(completion.created >= before);
  const stream = await client.chat.completions.create({ model: ALIAS, messages: [{ role: 'user', content: '1+1=' }], stream: true });
  const created = new Set();
  for await (const chunk of stream) created.add(chunk.created);
  assert.equal(created.size, 1, 'every chunk of a response carries one time');
  assert.ok([...created][0] >= before);
});

test('--alias names the model in the list, by id, and in responses; an unknown id is a 404', async () => {
  const listed = await client.models.list();
  assert.deepEqual(listed.data.map((m) => m.id), [ALIAS]);
  const model = await client.models.retrieve(ALIAS);
  assert.equal(model.id, ALIAS);
  assert.equal(model.object, 'model');
  const r = await client.chat.completions.create({ model: ALIAS, messages: [{ role: 'user', content: '12+34=' }] });
  assert.equal(r.model, ALIAS);
  const missing = await fetch(`${server.base}/v1/models/gpt-4o`, { headers: auth });
  assert.equal(missing.status, 404);
  const body = await missing.json();
  assertErrorShape(assert, body);
  assert.equal(body.error.code, 'model_not_found');
  assert.match(body.error.message, new RegExp(`this server serves ${ALIAS}`));
  await assert.rejects(client.models.retrieve('gpt-4o'), (e) => e.status === 404);
});

test('embeddings are refused with a 404 naming what is served', async () => {
  await assert.rejects(client.embeddings.create({ model: ALIAS, input: 'hello' }), (e) => {
    assert.equal(e.status, 404);
    assert.equal(e.message.includes(`this server serves chat and text completions of ${ALIAS}; embeddings are not served`), true, e.message);
    return true;
  });
});

test('CORS: an allowed origin gets its headers and its preflight, with no key; others get none', async () => {
  const origin = 'https://app.example';
  const preflight = await fetch(`${server.base}/v1/chat/completions`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), origin);
  assert.match(preflight.headers.get('access-control-allow-methods'), /POST/);
  assert.match(preflight.headers.get('access-control-allow-methods'), /GET/);
  const allowed = preflight.headers.get('access-control-allow-headers').toLowerCase();
  assert.match(allowed, /authorization/);
  assert.match(allowed, /content-type/);

  const answer = await post(server.base, '/v1/chat/completions', { messages: [{ role: 'user', content: '1+1=' }] }, { ...auth, origin });
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get('access-control-allow-origin'), origin);
  // A stream carries it too, and a refusal (so the page can read why).
  const streamed = await post(server.base, '/v1/chat/completions', { messages: [{ role: 'user', content: '1+1=' }], stream: true }, { ...auth, origin });
  assert.equal(streamed.headers.get('access-control-allow-origin'), origin);
  const refused = await post(server.base, '/v1/chat/completions', { messages: [] }, { origin });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get('access-control-allow-origin'), origin);

  const other = await fetch(`${server.base}/v1/models`, { headers: { ...auth, origin: 'https://elsewhere.example' } });
  assert.equal(other.headers.get('access-control-allow-origin'), null);
  const otherPreflight = await fetch(`${server.base}/v1/models`, { method: 'OPTIONS', headers: { origin: 'https://elsewhere.example' } });
  assert.equal(otherPreflight.status, 403);
});

test('without --cors-origin no CORS header is sent; * allows any origin', async () => {
  const closed = await startServer();
  try {
    const r = await fetch(`${closed.base}/v1/models`, { headers: { origin: 'https://app.example' } });
    assert.equal(r.status, 200);
    for (const [name] of r.headers) assert.ok(!name.startsWith('access-control-'), name);
    const preflight = await fetch(`${closed.base}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://app.example' } });
    assert.notEqual(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), null);
  } finally {
    await closed.stop();
  }
  const open = await startServer(['--cors-origin', '*']);
  try {
    const r = await fetch(`${open.base}/v1/models`, { headers: { origin: 'https://anywhere.example' } });
    assert.equal(r.headers.get('access-control-allow-origin'), '*');
  } finally {
    await open.stop();
  }
});

test('each request leaves one line on stderr: method, route, status, tokens, first token, total', async () => {
  const before = server.stderr().length;
  await client.chat.completions.create({ model: ALIAS, messages: [{ role: 'user', content: 'rev:abc=' }] });
  await fetch(`${server.base}/v1/nowhere`, { headers: auth });
  await waitFor(() => server.stderr().slice(before).includes('/v1/nowhere'), 'the log line of GET /v1/nowhere');
  const lines = server.stderr().slice(before).trim().split('\n');
  assert.equal(lines.length, 2, lines.join('\n'));
  assert.match(lines[0], /^stormo: POST \/v1\/chat\/completions 200 prompt_tokens=\d+ completion_tokens=4 first_token_ms=[\d.]+ total_ms=[\d.]+$/);
  const [, first, total] = /first_token_ms=([\d.]+) total_ms=([\d.]+)/.exec(lines[0]).map(Number);
  assert.ok(first <= total);
  assert.match(lines[1], /^stormo: GET \/v1\/nowhere 404 prompt_tokens=0 completion_tokens=0 first_token_ms=- total_ms=[\d.]+$/);
});

test('--log-format json: every stderr line is a JSON object, requests with the same fields', async () => {
  const s = await startServer(['--log-format', 'json']);
  try {
    const c = s.client();
    await c.completions.create({ model: 'x', prompt: '12+34=' });
    await c.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: '1+1=' }], stream: true }).then(async (st) => {
      for await (const _ of st);
    });
    await waitFor(() => s.stderr().split('\n').filter((l) => l.includes('"request"')).length >= 3, 'three request lines');
  } finally {
    const { code } = await s.stop();
    assert.equal(code, 0);
  }
  const lines = s.stderr().trim().split('\n');
  const records = lines.map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      assert.fail(`not a JSON line: ${l}`);
    }
  });
  for (const r of records) {
    assert.equal(typeof r.time, 'string');
    assert.equal(typeof r.level, 'string');
    assert.equal(typeof r.message, 'string');
  }
  assert.ok(records.some((r) => /^listening on http:/.test(r.message)));
  assert.ok(records.some((r) => r.message === 'stopped'));
  const requests = records.filter((r) => r.message === 'request');
  const completion = requests.find((r) => r.route === '/v1/completions');
  assert.deepEqual(Object.keys(completion), ['time', 'level', 'message', 'method', 'route', 'status', 'prompt_tokens', 'completion_tokens', 'first_token_ms', 'total_ms']);
  assert.equal(completion.method, 'POST');
  assert.equal(completion.status, 200);
  assert.ok(completion.prompt_tokens > 0);
  assert.equal(completion.completion_tokens, 3);  // 46 and the stop id
  assert.ok(completion.first_token_ms >= 0 && completion.first_token_ms <= completion.total_ms);
  const streamed = requests.find((r) => r.route === '/v1/chat/completions');
  assert.equal(streamed.status, 200);
  assert.ok(streamed.completion_tokens > 0);
  assert.equal(typeof streamed.first_token_ms, 'number');
  const health = requests.find((r) => r.route === '/health');
  assert.equal(health.first_token_ms, null);
});

test('bad --log-format, --cors-origin and --alias are refused naming the option', () => {
  for (const [args, option] of [
    [['--log-format', 'yaml'], '--log-format'],
    [['--cors-origin', 'app.example'], '--cors-origin'],
    [['--alias', ''], '--alias'],
  ]) {
    const r = spawnSync(STORMO, ['serve', '--model', DEMO, '--port', '0', ...args], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.ok(r.stderr.includes(option), r.stderr);
  }
});

test('cached_tokens counts the prompt positions the slot kept, on both endpoints', async () => {
  // One slot (--parallel 1): each request reuses what the one before left in it.
  const tokens = async (content) => (await post(server.base, '/tokenize', { content }, auth)).json.tokens;
  const common = (a, b) => {
    let n = 0;
    while (n < a.length && n < b.length && a[n] === b[n]) ++n;
    return n;
  };
  const complete = (prompt) => client.completions.create({ model: ALIAS, prompt, max_tokens: 3 });
  const first = await complete('sort:zyxw=');
  const again = await complete('sort:zyxw=');
  assert.equal(again.usage.prompt_tokens, first.usage.prompt_tokens);
  // The whole prompt but its last position, which is always computed.
  assert.equal(again.usage.prompt_tokens_details.cached_tokens, again.usage.prompt_tokens - 1);
  const longer = 'sort:zyxw=:';
  const extended = await complete(longer);
  assert.equal(extended.usage.prompt_tokens_details.cached_tokens, common(await tokens('sort:zyxw='), await tokens(longer)));
  const unrelated = await complete('copy:abc=');
  assert.equal(unrelated.usage.prompt_tokens_details.cached_tokens, common(await tokens(longer), await tokens('copy:abc=')));

  // A chat's prompt is its messages rendered by the template (`stormo chat-template --ids`).
  const rendered = (content) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stormo-chat-'));
    try {
      const file = path.join(dir, 'messages.json');
      fs.writeFileSync(file, JSON.stringify({ messages: [{ role: 'user', content }], options: { add_generation_prompt: true } }));
      const r = spawnSync(STORMO, ['chat-template', '--tokenizer', DEMO, '--messages', file, '--ids'], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      return r.stdout.trim().split(/\s+/).map(Number);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  const chat = (content) => client.chat.completions.create({ model: ALIAS, messages: [{ role: 'user', content }] });
  await chat('12+34=');
  const repeated = await chat('12+34=');
  assert.equal(repeated.usage.prompt_tokens_details.cached_tokens, repeated.usage.prompt_tokens - 1);
  const different = await chat('12+35=');
  const kept = common(rendered('12+34='), rendered('12+35='));
  assert.ok(kept > 0);
  assert.equal(different.usage.prompt_tokens_details.cached_tokens, kept);
  // Streamed, the usage chunk says the same.
  const stream = await client.chat.completions.create({
    model: ALIAS, messages: [{ role: 'user', content: '12+35=' }], stream: true, stream_options: { include_usage: true },
  });
  let usage = null;
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
  assert.equal(usage.prompt_tokens_details.cached_tokens, usage.prompt_tokens - 1);
});
