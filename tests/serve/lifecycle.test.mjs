// A client that leaves cancels its generation within a token (the server stays healthy and counts
// it cancelled); SIGTERM while busy ends the stream in flight and exits 0. (/health's 503 while
// loading is checked by tests/unit/test_serve_routes.cpp: the demo loads too fast to catch it here.)
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { metric, startServer, waitFor } from './support.mjs';

// A long answer: the demo would stop at <|end|> after a few tokens; ignore_eos keeps it going.
const long = { model: 'demo', messages: [{ role: 'user', content: '123+456=' }], max_tokens: 3000, ignore_eos: true, stream: true };

test('aborting a streamed request cancels it; the server stays healthy and counts it', async () => {
  const server = await startServer();
  try {
    const openai = server.client();
    const controller = new AbortController();
    const stream = await openai.chat.completions.create(long, { signal: controller.signal });
    let pieces = 0;
    // The client's stream ends quietly on an abort (the library swallows its AbortError).
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) ++pieces;
      if (pieces === 3) controller.abort();
    }
    assert.ok(pieces >= 3 && pieces < 100, `${pieces} pieces before the abort took effect`);
    await waitFor(async () => (await metric(server.base, 'stormo_requests_total{outcome="cancelled"}')) === 1, 'the cancel');
    // Far fewer than 3000 tokens were generated: the generation stopped soon after the abort.
    assert.ok((await metric(server.base, 'stormo_generated_tokens_total')) < 3000);
    assert.equal(await metric(server.base, 'stormo_requests_running'), 0);

    // Non-streamed too: the connection closes while the answer is being generated.
    const c2 = new AbortController();
    const pending = openai.chat.completions.create({ ...long, stream: false }, { signal: c2.signal });
    setTimeout(() => c2.abort(), 100);
    await assert.rejects(pending);
    await waitFor(async () => (await metric(server.base, 'stormo_requests_total{outcome="cancelled"}')) === 2, 'the second cancel');

    const r = await openai.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: '123+456=' }] });
    assert.equal(r.choices[0].message.content, '579');
    assert.equal((await fetch(`${server.base}/health`)).status, 200);
  } finally {
    const { code } = await server.stop();
    assert.equal(code, 0);
  }
});

test('SIGTERM while busy: the stream in flight ends cleanly, queued ones are refused, exit 0', async () => {
  // One slot: a second request waits in the queue behind the first; the shutdown refuses it with 503.
  const server = await startServer(['--shutdown-grace', '1', '--parallel', '1']);
  const openai = server.client();
  const stream = await openai.chat.completions.create(long);
  const queued = openai.chat.completions.create({ ...long, stream: false }).then(
    () => 'answered',
    (e) => e,
  );
  let pieces = 0;
  let outcome = 'finished';
  const reading = (async () => {
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content) ++pieces;
        if (pieces === 5) server.child.kill('SIGTERM');
      }
    } catch (e) {
      // The answer was cut at the grace's end: the stream carries the server's error event.
      assert.match(e.message, /shutting down/);
      outcome = 'cut';
    }
  })();
  const { code, signal } = await server.exited;
  await reading;
  assert.equal(signal, null);
  assert.equal(code, 0, server.stderr());
  assert.ok(pieces >= 5);
  assert.ok(['finished', 'cut'].includes(outcome));
  const refused = await queued;
  assert.equal(refused.status, 503, String(refused));
  assert.equal(refused.error?.code, 'server_shutting_down');
  assert.match(server.stderr(), /stormo: stopped/);
});
