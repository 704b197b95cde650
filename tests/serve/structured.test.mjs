// Structured output through the clients agents use: the official OpenAI client's
// chat.completions.parse with zodResponseFormat, the Vercel AI SDK's generateObject and
// LangChain's withStructuredOutput, plus response_format json_object, a GBNF grammar on both
// endpoints, streaming, and the refusals. The model is the gpt_oss fixture (random weights) with a
// real byte-level tokenizer: it knows nothing of JSON, so every answer that parses and matches its
// schema does so because the token mask made it (docs/serve.md, structured output).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { assertErrorShape, post, startServer } from './support.mjs';

const require = createRequire(path.join(process.env.STORMO_NODE_MODULES, 'index.js'));
const { z } = require('zod');
const { zodResponseFormat } = require('openai/helpers/zod');
const { generateObject } = require('ai');
const { createOpenAICompatible } = require('@ai-sdk/openai-compatible');
const { ChatOpenAI } = require('@langchain/openai');

const MODEL = process.env.STORMO_STRUCTURED_MODEL;
if (!MODEL) throw new Error('STORMO_STRUCTURED_MODEL must name the fixture with a real tokenizer (ctest sets it)');

// The kind of schema an agent sends: nested objects, enums, arrays, required fields. Strings are
// bounded: a random-weight model rarely closes a string by itself, and every bound here keeps an
// answer well inside max_tokens, so each one ends with "stop".
const Ticket = z.object({
  title: z.string().max(12),
  priority: z.enum(['low', 'medium', 'high']),
  done: z.boolean(),
  estimate: z.number().int(),
  assignee: z.object({ name: z.string().max(8), team: z.enum(['core', 'web', 'infra']) }),
  labels: z.array(z.string().max(6)).max(3),
});
const MAX_TOKENS = 1500;

let server;
before(async () => {
  server = await startServer([], { model: MODEL });
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

const messages = [{ role: 'user', content: 'File a ticket for the broken login page.' }];

test('the OpenAI client parses zodResponseFormat answers, greedy and seeded', async () => {
  const client = server.client();
  for (const sampling of [{ temperature: 0 }, { temperature: 1, seed: 7 }, { temperature: 0.7, top_p: 0.9, seed: 11 }]) {
    const r = await client.chat.completions.parse({
      model: 'fixture',
      messages,
      response_format: zodResponseFormat(Ticket, 'ticket'),
      max_tokens: MAX_TOKENS,
      ...sampling,
    });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'stop', JSON.stringify(sampling));
    assert.ok(choice.message.parsed, choice.message.content);
    Ticket.parse(choice.message.parsed);
    assert.deepEqual(JSON.parse(choice.message.content), choice.message.parsed);
  }
});

test('the Vercel AI SDK generateObject gets an object matching the schema', async () => {
  const provider = createOpenAICompatible({
    name: 'stormo',
    baseURL: `${server.base}/v1`,
    apiKey: 'unused',
    supportsStructuredOutputs: true,
  });
  const { object, finishReason } = await generateObject({
    model: provider.chatModel('fixture'),
    schema: Ticket,
    prompt: 'File a ticket for the broken login page.',
    maxOutputTokens: MAX_TOKENS,
    seed: 3,
    maxRetries: 0,
  });
  assert.equal(finishReason, 'stop');
  Ticket.parse(object);
});

test("LangChain's withStructuredOutput returns the parsed object", async () => {
  const llm = new ChatOpenAI({
    model: 'fixture',
    apiKey: 'unused',
    configuration: { baseURL: `${server.base}/v1` },
    maxTokens: MAX_TOKENS,
    temperature: 0,
    maxRetries: 0,
  });
  const structured = llm.withStructuredOutput(Ticket, { name: 'ticket', method: 'jsonSchema', strict: true });
  const ticket = await structured.invoke('File a ticket for the broken login page.');
  Ticket.parse(ticket);
});

test('a recursive schema with $defs and anyOf, streamed, parses when the pieces are joined', async () => {
  const schema = {
    type: 'object',
    properties: { root: { $ref: '#/$defs/node' } },
    required: ['root'],
    additionalProperties: false,
    $defs: {
      node: {
        type: 'object',
        properties: {
          kind: { enum: ['leaf', 'pair'] },
          value: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
          children: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 },
        },
        required: ['kind', 'value', 'children'],
        additionalProperties: false,
      },
    },
  };
  const stream = await server.client().chat.completions.create({
    model: 'fixture',
    messages,
    response_format: { type: 'json_schema', json_schema: { name: 'tree', schema, strict: true } },
    max_tokens: MAX_TOKENS,
    seed: 5,
    temperature: 1,
    stream: true,
  });
  let content = '';
  let finish = null;
  for await (const chunk of stream) {
    content += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  if (finish === 'stop') {
    const tree = JSON.parse(content);
    const check = (node) => {
      assert.ok(['leaf', 'pair'].includes(node.kind), content);
      assert.ok(node.value === null || Number.isInteger(node.value), content);
      assert.ok(Array.isArray(node.children) && node.children.length <= 2, content);
      node.children.forEach(check);
    };
    check(tree.root);
  } else {
    // A tree can nest past any token budget: then the answer is cut, and says so.
    assert.equal(finish, 'length');
  }
});

test('response_format json_object gives a JSON object on both endpoints', async () => {
  const chat = await post(server.base, '/v1/chat/completions', {
    messages,
    response_format: { type: 'json_object' },
    max_tokens: 12,
  });
  assert.equal(chat.status, 200, chat.text);
  const answer = chat.json.choices[0];
  if (answer.finish_reason === 'stop') assert.equal(typeof JSON.parse(answer.message.content), 'object');
  else assert.match(answer.message.content, /^\s*\{/);  // cut by max_tokens: the start of an object
  const text = await post(server.base, '/v1/completions', {
    prompt: 'JSON:',
    response_format: { type: 'json_schema', json_schema: { name: 'flag', schema: { type: 'object', properties: { on: { type: 'boolean' } }, required: ['on'] } } },
    max_tokens: 200,
  });
  assert.equal(text.status, 200, text.text);
  assert.equal(text.json.choices[0].finish_reason, 'stop');
  assert.equal(typeof JSON.parse(text.json.choices[0].text).on, 'boolean');
});

test('a GBNF grammar constrains chat and text completions', async () => {
  const grammar = 'root ::= "answer: " ("yes" | "no") " (" [0-9]{1,2} "%)"';
  for (const [route, body] of [
    ['/v1/chat/completions', { messages, grammar, max_tokens: 50, temperature: 1, seed: 2 }],
    ['/v1/completions', { prompt: 'Is it on?', grammar, max_tokens: 50 }],
  ]) {
    const r = await post(server.base, route, body);
    assert.equal(r.status, 200, r.text);
    const choice = r.json.choices[0];
    assert.equal(choice.finish_reason, 'stop');
    assert.match(choice.message?.content ?? choice.text, /^answer: (yes|no) \([0-9]{1,2}%\)$/);
  }
});

test('an answer cut by max_tokens ends with finish_reason "length"', async () => {
  const r = await server.client().chat.completions.create({
    model: 'fixture',
    messages,
    response_format: { type: 'json_schema', json_schema: { name: 'essay', schema: { type: 'object', properties: { essay: { type: 'string' } }, required: ['essay'] } } },
    max_tokens: 6,
  });
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 6);
  assert.match(r.choices[0].message.content, /^\{/);
});

test('schemas and grammars the engine cannot honour are refused with 400 naming the keyword or the place', async () => {
  const refused = async (body, param, pattern) => {
    const r = await post(server.base, '/v1/chat/completions', { messages, max_tokens: 10, ...body });
    assert.equal(r.status, 400, r.text);
    assertErrorShape(assert, r.json, param);
    assert.match(r.json.error.message, pattern);
  };
  const format = (schema, strict = false) => ({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict } } });
  await refused(format({ type: 'object', properties: { email: { type: 'string', format: 'email' } } }),
    'response_format.json_schema.schema', /\$\.properties\.email\.format: the keyword 'format' is not supported/);
  await refused(format({ type: 'string', pattern: '^[a-z]+$' }), 'response_format.json_schema.schema', /\$\.pattern: the keyword 'pattern'/);
  await refused(format({ type: 'integer', minimum: 1 }), 'response_format.json_schema.schema', /\$\.minimum/);
  await refused(format({ type: 'integer', 'x-unknown': 1 }, true), 'response_format.json_schema.schema', /\$\.x-unknown: unknown keyword/);
  await refused(format({ $ref: '#/$defs/none' }), 'response_format.json_schema.schema', /leads nowhere/);
  await refused({ grammar: 'root ::= "a" |\n  ( "b"\n' }, 'grammar', /grammar line 3, column 1: expected '\)'/);
  await refused({ grammar: 'root ::= thing' }, 'grammar', /grammar line 1, column 10: undefined rule 'thing'/);
  await refused({ response_format: { type: 'xml' } }, 'response_format.type', /"text", "json_object" or "json_schema"/);
  await refused({ response_format: { type: 'json_schema' } }, 'response_format.json_schema', /must be an object/);
  await refused({ response_format: { type: 'json_object' }, grammar: 'root ::= "a"' }, 'grammar', /both constrain the answer/);
  // The server goes on answering.
  const ok = await post(server.base, '/v1/chat/completions', { messages, grammar: 'root ::= "fine"', max_tokens: 5 });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.json.choices[0].message.content, 'fine');
});
