// Bad input gets a 4xx in OpenAI's error shape and the server keeps serving: malformed JSON, wrong
// types, unknown roles, n > 1, negative or huge max_tokens, prompts beyond the context, bodies and
// headers past their caps, slow clients; and --api-key.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertErrorShape, metric, post, rawExchange, startServer } from './support.mjs';

let server;
let client;
before(async () => {
  // A small context so "beyond the context" is cheap to reach; small caps and timeout to test them.
  server = await startServer(['--ctx', '64', '--max-body', '4KiB', '--timeout', '1']);
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

const user = (content) => [{ role: 'user', content }];

async function stillAnswers() {
  const r = await client.chat.completions.create({ model: 'm', messages: user('123+456=') });
  assert.equal(r.choices[0].message.content, '579');
}

test('each bad chat request is a 400 naming its field, and the server answers after each', async () => {
  const cases = [
    ['{"messages": [', null],
    ['[1, 2]', null],
    [{ model: 'm' }, 'messages'],
    [{ messages: 'hi' }, 'messages'],
    [{ messages: [] }, 'messages'],
    [{ messages: [{ role: 'wizard', content: 'hi' }] }, 'messages[0].role'],
    [{ messages: [{ role: 'user', content: 5 }] }, 'messages[0].content'],
    [{ messages: user('1+1='), n: 2 }, 'n'],
    [{ messages: user('1+1='), max_tokens: -5 }, 'max_tokens'],
    [{ messages: user('1+1='), max_tokens: 0 }, 'max_tokens'],
    [{ messages: user('1+1='), max_tokens: 1e15 }, 'max_tokens'],
    [{ messages: user('1+1='), max_tokens: 'ten' }, 'max_tokens'],
    [{ messages: user('1+1='), temperature: 'hot' }, 'temperature'],
    [{ messages: user('1+1='), top_p: 7 }, 'top_p'],
    [{ messages: user('1+1='), stop: 3 }, 'stop'],
    [{ messages: user('1+1='), stream: 'yes' }, 'stream'],
    [{ messages: user('1+1='), reasoning_effort: 'extreme' }, 'reasoning_effort'],
  ];
  for (const [body, param] of cases) {
    const r = await post(server.base, '/v1/chat/completions', body);
    assert.equal(r.status, 400, `${JSON.stringify(body)} -> ${r.text}`);
    assertErrorShape(assert, r.json, param);
    assert.equal(r.json.error.type, 'invalid_request_error');
  }
  await stillAnswers();
  assert.ok((await metric(server.base, 'stormo_requests_total{outcome="client_error"}')) >= cases.length);
});

test('the OpenAI client sees the refusals as BadRequestError with the message', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'm', messages: user('1+1='), n: 3 }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.param, 'n');
    assert.match(e.message, /'n' must be 1/);
    return true;
  });
  await assert.rejects(client.completions.create({ model: 'm', prompt: 42 }), (e) => e.status === 400 && e.param === 'prompt');
  await stillAnswers();
});

test('a prompt or max_tokens beyond the context is context_length_exceeded, before any KV change', async () => {
  const long = await post(server.base, '/v1/chat/completions', { messages: user('123+456='.repeat(10)) });
  assert.equal(long.status, 400);
  assertErrorShape(assert, long.json, 'messages');
  assert.equal(long.json.error.code, 'context_length_exceeded');
  const tokens = await post(server.base, '/v1/completions', { prompt: '123+456=', max_tokens: 60 });
  assert.equal(tokens.status, 400);
  assertErrorShape(assert, tokens.json, 'max_tokens');
  assert.equal(tokens.json.error.code, 'context_length_exceeded');
  await stillAnswers();
});

test('a body past --max-body is 413 and headers past the cap are 431, in the error shape', async () => {
  const big = await post(server.base, '/v1/chat/completions', { messages: user('1'.repeat(8000)) });
  assert.equal(big.status, 413);
  assertErrorShape(assert, big.json);
  const reply = await rawExchange(
    server.port,
    `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`,
  );
  assert.match(reply, /^HTTP\/1\.1 431 /);
  assert.match(reply, /"error"/);
  await stillAnswers();
});

test('malformed HTTP is refused with 400 and the connection closed', async () => {
  const reply = await rawExchange(server.port, 'THIS IS NOT HTTP\r\n\r\n');
  assert.match(reply, /^HTTP\/1\.1 400 /);
  await stillAnswers();
});

test('a client that sends half a request is timed out (--timeout 1)', async () => {
  const started = Date.now();
  const reply = await rawExchange(server.port, 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"mess', {
    timeoutMs: 5000,
  });
  const waited = Date.now() - started;
  assert.equal(reply, '');
  assert.ok(waited >= 900 && waited < 4000, `closed after ${waited} ms`);
  await stillAnswers();
});

test('unknown routes are 404 and wrong methods 405, in the error shape', async () => {
  const r = await fetch(`${server.base}/v1/nothing`);
  assert.equal(r.status, 404);
  assertErrorShape(assert, await r.json());
  const m = await fetch(`${server.base}/v1/chat/completions`);
  assert.equal(m.status, 405);
  assertErrorShape(assert, await m.json());
});

test('--api-key: every route but /health, the chat page and its icon needs the bearer key', async () => {
  const keyed = await startServer(['--api-key', 'sesame']);
  try {
    assert.equal((await fetch(`${keyed.base}/health`)).status, 200);
    // The page holds no secret: it asks for the key the API needs.
    assert.equal((await fetch(`${keyed.base}/`)).status, 200);
    assert.equal((await fetch(`${keyed.base}/favicon.ico`)).status, 200);
    for (const route of ['/v1/models', '/metrics', '/v1/models/m']) {
      const r = await fetch(`${keyed.base}${route}`);
      assert.equal(r.status, 401, route);
      const body = await r.json();
      assertErrorShape(assert, body);
      assert.equal(body.error.code, 'invalid_api_key');
    }
    const wrong = keyed.client({ apiKey: 'sesamE' });
    await assert.rejects(wrong.chat.completions.create({ model: 'm', messages: user('123+456=') }), (e) => e.status === 401);
    const right = keyed.client({ apiKey: 'sesame' });
    const r = await right.chat.completions.create({ model: 'm', messages: user('123+456=') });
    assert.equal(r.choices[0].message.content, '579');
    const m = await fetch(`${keyed.base}/metrics`, { headers: { authorization: 'Bearer sesame' } });
    assert.equal(m.status, 200);
    const refused = /stormo_requests_total\{outcome="unauthorized"\} (\d+)/.exec(await m.text());
    assert.ok(refused && Number(refused[1]) >= 4, 'the refusals are counted');
  } finally {
    const { code } = await keyed.stop();
    assert.equal(code, 0);
  }
});
