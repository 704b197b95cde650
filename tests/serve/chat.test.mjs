// The demo model through the official OpenAI client: chat and text completions, streamed and not,
// stop sequences, usage, reasoning fields, the model list, /tokenize, /detokenize, /metrics.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { metric, post, startServer } from './support.mjs';

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

const ask = (content, extra = {}) => ({ model: 'gpt-oss-demo', messages: [{ role: 'user', content }], ...extra });

test('chat without streaming answers 123+456= with 579', async () => {
  const r = await client.chat.completions.create(ask('123+456='));
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.model, 'gpt-oss-demo');
  assert.equal(typeof r.created, 'number');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.content, '579');
  assert.equal(r.choices[0].finish_reason, 'stop');
  // The demo speaks no reasoning format: no reasoning_content, no tool calls.
  assert.equal(r.choices[0].message.reasoning_content, undefined);
  assert.equal(r.choices[0].message.tool_calls, undefined);
  // 579<|end|>; the server's first generation: nothing of the prompt was held.
  assert.deepEqual(r.usage, { prompt_tokens: 8, completion_tokens: 4, total_tokens: 12, prompt_tokens_details: { cached_tokens: 0 } });
});

test('chat with streaming sends deltas that add up to the answer, then usage', async () => {
  const stream = await client.chat.completions.create(ask('123+456=', { stream: true, stream_options: { include_usage: true } }));
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    ++chunks;
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      assert.equal(choice.delta.reasoning_content, undefined);
      if (choice.delta.content) text += choice.delta.content;
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(text, '579');
  assert.equal(finish, 'stop');
  assert.ok(chunks >= 5, `role, 3 digits, finish, usage: ${chunks} chunks`);
  // The same prompt again: its slot kept all of it but the last position, which is always computed.
  assert.deepEqual(usage, { prompt_tokens: 8, completion_tokens: 4, total_tokens: 12, prompt_tokens_details: { cached_tokens: 7 } });
});

test('multi-turn messages are rendered with the model template', async () => {
  const r = await client.chat.completions.create({
    model: 'gpt-oss-demo',
    messages: [
      { role: 'user', content: '12+34=' },
      { role: 'assistant', content: '46' },
      { role: 'user', content: 'rev:hello=' },
    ],
  });
  assert.equal(r.choices[0].message.content, 'olleh');
});

test('stop sequences cut the answer and end it with finish_reason stop', async () => {
  const r = await client.chat.completions.create(ask('rev:hello=', { stop: ['l'] }));
  assert.equal(r.choices[0].message.content, 'o');
  assert.equal(r.choices[0].finish_reason, 'stop');
  const s = await client.chat.completions.create(ask('123+456=', { stop: '79', stream: true }));
  let text = '';
  for await (const chunk of s) for (const c of chunk.choices) text += c.delta.content ?? '';
  assert.equal(text, '5');
});

test('max_tokens and max_completion_tokens end the answer with finish_reason length', async () => {
  const a = await client.chat.completions.create(ask('123+456=', { max_tokens: 2 }));
  assert.equal(a.choices[0].message.content, '57');
  assert.equal(a.choices[0].finish_reason, 'length');
  assert.equal(a.usage.completion_tokens, 2);
  const b = await client.chat.completions.create(ask('sort:dcab=', { max_completion_tokens: 1 }));
  assert.equal(b.choices[0].message.content, 'a');
  assert.equal(b.choices[0].finish_reason, 'length');
});

test('sampling fields are accepted and a seed makes sampling repeatable', async () => {
  const params = ask('copy:abc=', { temperature: 1.2, top_p: 0.95, top_k: 20, min_p: 0.01, seed: 42, max_tokens: 12, ignore_eos: true });
  const a = await client.chat.completions.create(params);
  const b = await client.chat.completions.create(params);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.equal(a.usage.completion_tokens, 12);
});

test('chat_template_kwargs and reasoning_effort reach the template without changing a plain one', async () => {
  const r = await client.chat.completions.create(
    ask('123+456=', { reasoning_effort: 'low', chat_template_kwargs: { enable_thinking: false } }),
  );
  assert.equal(r.choices[0].message.content, '579');
});

test('text completions, streamed and not', async () => {
  const r = await client.completions.create({ model: 'gpt-oss-demo', prompt: 'rev:hello=' });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].text, 'olleh');
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.usage.prompt_tokens, 10);
  const s = await client.completions.create({ model: 'gpt-oss-demo', prompt: '123+456=', stream: true, stop: ['9'] });
  let text = '';
  let finish = null;
  for await (const chunk of s) for (const c of chunk.choices) {
    text += c.text;
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(text, '57');
  assert.equal(finish, 'stop');
});

test('the model list names the served model', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.equal(models.length, 1);
  assert.equal(models[0].id, 'gpt-oss-demo');
  assert.equal(models[0].object, 'model');
});

test('tokenize and detokenize as llama-server does', async () => {
  const t = await post(server.base, '/tokenize', { content: '123+456=' });
  assert.equal(t.status, 200);
  assert.deepEqual(t.json, { tokens: [1, 2, 3, 40, 4, 5, 6, 45] });
  const d = await post(server.base, '/detokenize', { tokens: [5, 7, 9, 48] });
  assert.equal(d.status, 200);
  assert.deepEqual(d.json, { content: '579<|end|>' });
  const bad = await post(server.base, '/detokenize', { tokens: [100000] });
  assert.equal(bad.status, 400);
});

test('/health and /metrics', async () => {
  const h = await fetch(`${server.base}/health`);
  assert.equal(h.status, 200);
  assert.deepEqual(await h.json(), { status: 'ok' });
  const m = await fetch(`${server.base}/metrics`);
  assert.equal(m.status, 200);
  assert.match(m.headers.get('content-type'), /^text\/plain/);
  assert.ok((await metric(server.base, 'stormo_requests_total{outcome="ok"}')) >= 5);
  assert.ok((await metric(server.base, 'stormo_generated_tokens_total')) > 0);
  assert.ok((await metric(server.base, 'stormo_prompt_tokens_total')) > 0);
  assert.equal(await metric(server.base, 'stormo_expert_hit_rate'), 1); // every expert resident at this size
  assert.equal(await metric(server.base, 'stormo_queue_depth'), 0);
  assert.equal(await metric(server.base, 'stormo_model_ready'), 1);
});
