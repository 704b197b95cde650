#!/usr/bin/env node
// The soak behind scripts/soak.sh (which documents the options): `stormo serve` under mixed load
// for a set time, its RSS sampled every second, then every answer it gave compared with what a
// fresh server answers to the same request. Exit 0 only when nothing differed, the server never
// failed a good request, it stopped cleanly on SIGTERM, and its RSS grew no more than the bound.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: o } = parseArgs({
  options: {
    duration: { type: 'string', default: '1800' },
    model: { type: 'string', default: path.join(here, '..', 'models', 'gpt-oss-demo') },
    stormo: { type: 'string', default: path.join(here, '..', 'build', 'bin', 'stormo') },
    clients: { type: 'string', default: '6' },
    'max-growth': { type: 'string', default: '64' },
    seed: { type: 'string', default: '1' },
    compare: { type: 'string', default: '2000' },
    // More `stormo serve` options for both servers, space-separated (e.g. '--parallel 4 --speculate auto').
    'serve-args': { type: 'string', default: '' },
  },
});
const durationS = Number(o.duration);
const clients = Number(o.clients);
const maxGrowthMiB = Number(o['max-growth']);
const compareAtMost = Number(o.compare);
for (const [name, v] of [['--duration', durationS], ['--clients', clients], ['--max-growth', maxGrowthMiB], ['--compare', compareAtMost]])
  if (!Number.isFinite(v) || v <= 0) {
    console.error(`soak: ${name} must be a positive number`);
    process.exit(2);
  }

const modules = process.env.STORMO_NODE_MODULES ?? path.join(here, '..', 'build', 'serve-node', 'node_modules');
let OpenAI;
try {
  OpenAI = createRequire(path.join(modules, 'index.js'))('openai').default;
} catch (e) {
  console.error(`soak: the openai package is not in ${modules} (set STORMO_NODE_MODULES): ${e.message}`);
  process.exit(2);
}

// Small limits so the oversized requests are cheap to make; a queue long enough that good
// requests are not refused by it (they may be, and are then counted as such).
const SERVER_ARGS = ['--ctx', '256', '--max-body', '64KiB', '--tokenize-budget', '256KiB', '--header-timeout', '2',
  '--timeout', '10', '--max-queue', '64', ...o['serve-args'].split(/\s+/).filter(Boolean)];

function startServer() {
  const child = spawn(o.stormo, ['serve', '--model', o.model, '--port', '0', ...SERVER_ARGS], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(stderr);
      if (m && !child.port) {
        child.port = Number(m[1]);
        waitHealthy(child.port).then(() =>
          resolve({ child, port: child.port, base: `http://127.0.0.1:${child.port}`, exited, stderr: () => stderr }),
        reject);
      }
    });
    exited.then(({ code, signal }) => reject(new Error(`stormo serve exited (${code ?? signal}) before it was ready: ${stderr}`)));
  });
}

async function waitHealthy(port) {
  for (let i = 0; i < 3000; ++i) {
    const r = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
    if (r && r.status === 200) return;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error('/health never became 200');
}

function rssMiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

// A small seeded generator, so a run's mix can be repeated.
let state = Number(o.seed) >>> 0 || 1;
function random() {
  state ^= state << 13;
  state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5;
  state >>>= 0;
  return state / 4294967296;
}
const pick = (list) => list[Math.floor(random() * list.length)];
const letters = (n) => Array.from({ length: n }, () => pick('abcdefghijklmnopqrstuvwxyz'.split(''))).join('');

// The demo's tasks; other models answer whatever they answer, which is compared all the same.
function newProblem() {
  switch (Math.floor(random() * 4)) {
    case 0: return `${Math.floor(random() * 1000)}+${Math.floor(random() * 1000)}=`;
    case 1: return `sort:${letters(2 + Math.floor(random() * 6))}=`;
    case 2: return `rev:${letters(2 + Math.floor(random() * 6))}=`;
    default: return `copy:${letters(2 + Math.floor(random() * 6))}=`;
  }
}
// A pool of problems, so the same request comes again during the soak (its answer must too).
const POOL = Array.from({ length: 100 }, newProblem);
const problem = () => pick(POOL);

// Every answer to a repeatable request (greedy, or sampled with a seed), by request; streamed and
// whole answers to the same request must agree, as must the fresh server's.
const answers = new Map();
const differences = [];
let repeats = 0;
function record(key, text) {
  if (answers.has(key)) ++repeats;
  if (!answers.has(key)) answers.set(key, text);
  else if (answers.get(key) !== text) differences.push({ key, first: answers.get(key), now: text });
}

const counts = { served: 0, cancelled: 0, refused: new Map(), unexpected: [] };
const refused = (kind) => counts.refused.set(kind, (counts.refused.get(kind) ?? 0) + 1);
// What a connection error hides: the socket's own error (a reset, a refusal), when there is one.
function causeOf(e) {
  const c = e.cause;
  return c ? ` (cause: ${c.code ?? ''} ${c.message ?? c}${c.cause ? `; ${c.cause.code ?? ''} ${c.cause.message ?? ''}` : ''})` : '';
}

function unexpected(what, detail) {
  counts.unexpected.push(`${what}: ${detail}`);
}

async function rawExchange(port, data, timeoutMs = 15000) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('connect', () => socket.write(data));
    socket.on('data', (chunk) => (received += chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
  });
}

async function postJson(base, route, body) {
  const r = await fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await r.text();
  let code = null;
  try {
    code = JSON.parse(text)?.error?.code ?? null;
  } catch {}
  return { status: r.status, text, code };
}

// One request of each kind; `expect` names the refusal a bad one must get.
function generationRequest() {
  const chat = random() < 0.7;
  const sampled = random() < 0.3;
  const params = { max_tokens: pick([8, 16, 32]) };
  if (sampled) Object.assign(params, { temperature: 0.8, seed: Math.floor(random() * 4) });
  const content = problem();
  const history = random() < 0.2 ? [{ role: 'user', content: '12+34=' }, { role: 'assistant', content: '46' }] : [];
  const body = chat ? { messages: [...history, { role: 'user', content }], ...params } : { prompt: content, ...params };
  return { chat, body, key: JSON.stringify([chat, body]) };
}

async function generation(openai, stream) {
  const { chat, body, key } = generationRequest();
  try {
    let text = '';
    if (stream) {
      const s = chat
        ? await openai.chat.completions.create({ ...body, model: 'm', stream: true })
        : await openai.completions.create({ ...body, model: 'm', stream: true });
      for await (const chunk of s) text += chat ? chunk.choices[0]?.delta?.content ?? '' : chunk.choices[0]?.text ?? '';
    } else {
      const r = chat ? await openai.chat.completions.create({ ...body, model: 'm' }) : await openai.completions.create({ ...body, model: 'm' });
      text = chat ? r.choices[0].message.content ?? '' : r.choices[0].text;
    }
    ++counts.served;
    record(key, text);
  } catch (e) {
    if (e.status === 429) refused(`429 ${e.code ?? e.error?.code ?? ''}`.trim());
    else unexpected(stream ? 'streamed generation' : 'generation', `${e.status ?? ''} ${e.message}${causeOf(e)}`);
  }
}

async function cancelled(openai, base) {
  const controller = new AbortController();
  const { chat, body } = generationRequest();
  body.max_tokens = 200;
  body.ignore_eos = true;
  const started = chat
    ? openai.chat.completions.create({ ...body, model: 'm', stream: random() < 0.5 }, { signal: controller.signal })
    : openai.completions.create({ ...body, model: 'm', stream: random() < 0.5 }, { signal: controller.signal });
  setTimeout(() => controller.abort(), Math.floor(random() * 20));
  try {
    const r = await started;
    if (r && typeof r[Symbol.asyncIterator] === 'function') for await (const _ of r);
    ++counts.served;  // it finished before the abort
  } catch (e) {
    if (e.name === 'APIUserAbortError' || e.name === 'AbortError' || /abort/i.test(e.message)) ++counts.cancelled;
    else if (e.status === 429) refused(`429 ${e.code ?? ''}`.trim());
    else unexpected('cancelled generation', `${e.status ?? ''} ${e.message}${causeOf(e)}`);
  }
}

const BAD = [
  ['malformed JSON', '/v1/chat/completions', '{"messages": [', 400],
  ['wrong type', '/v1/chat/completions', '{"messages": "hi"}', 400],
  ['n > 1', '/v1/completions', '{"prompt": "1+1=", "n": 2}', 400],
  ['max_tokens past the context', '/v1/completions', '{"prompt": "1+1=", "max_tokens": 100000}', 400],
  ['prompt past the context', '/v1/completions', JSON.stringify({ prompt: '123+456='.repeat(64) }), 400],
  ['prompt past the context by its length', '/v1/completions', JSON.stringify({ prompt: '1'.repeat(20000) }), 400],
  ['body past --max-body', '/tokenize', JSON.stringify({ content: '1'.repeat(70000) }), 413],
  ['bad token id', '/detokenize', '{"tokens": [-1]}', 400],
];

async function badRequest(base) {
  const [what, route, body, status] = pick(BAD);
  try {
    const r = await postJson(base, route, body);
    if (r.status !== status) unexpected(what, `${r.status} ${r.text.slice(0, 200)}`);
    else refused(`${r.status} ${r.code ?? what}`);
  } catch (e) {
    unexpected(what, `${e.message}${causeOf(e)}`);
  }
}

async function rawRefusal(port) {
  const cases = [
    ['headers past 16 KiB', `GET /health HTTP/1.1\r\nHost: x\r\n${'A:\r\n'.repeat(6000)}\r\n`, 431],
    ['Transfer-Encoding gzip, chunked', 'POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n', 501],
    ['malformed HTTP', 'THIS IS NOT HTTP\r\n\r\n', 400],
  ];
  const [what, data, status] = pick(cases);
  const reply = await rawExchange(port, data);
  const m = /^HTTP\/1\.1 (\d+) /.exec(reply);
  if (!m || Number(m[1]) !== status) unexpected(what, reply.slice(0, 120) || '(closed without an answer)');
  else refused(`${status} ${what}`);
}

// A client that sends half a request head and stalls: the server must close it on its own.
async function slowClient(port) {
  const started = Date.now();
  const reply = await rawExchange(port, 'POST /v1/completions HTTP/1.1\r\nHost: x\r\n', 15000);
  const waited = Date.now() - started;
  if (reply !== '' || waited >= 14000) unexpected('slow client', `closed after ${waited} ms with "${reply.slice(0, 80)}"`);
  else refused('closed: slow client (--header-timeout)');
}

async function tokenizeRoundTrip(base) {
  const text = problem().repeat(1 + Math.floor(random() * 50));
  try {
    const t = await postJson(base, '/tokenize', JSON.stringify({ content: text }));
    if (t.status === 429) return refused(`429 ${t.code}`);
    if (t.status !== 200) return unexpected('tokenize', `${t.status} ${t.text.slice(0, 200)}`);
    const d = await postJson(base, '/detokenize', JSON.stringify({ tokens: JSON.parse(t.text).tokens }));
    if (d.status === 429) return refused(`429 ${d.code}`);
    if (d.status !== 200 || JSON.parse(d.text).content !== text) return unexpected('detokenize', d.text.slice(0, 200));
    counts.served += 2;
  } catch (e) {
    unexpected('tokenize', `${e.message}${causeOf(e)}`);
  }
}

async function health(base) {
  try {
    const r = await fetch(`${base}${random() < 0.5 ? '/health' : '/metrics'}`);
    await r.text();
    if (r.status !== 200) unexpected('health', String(r.status));
    else ++counts.served;
  } catch (e) {
    unexpected('health', `${e.message}${causeOf(e)}`);
  }
}

async function client(server, until) {
  const openai = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  while (Date.now() < until) {
    const r = random();
    if (r < 0.3) await generation(openai, false);
    else if (r < 0.55) await generation(openai, true);
    else if (r < 0.65) await cancelled(openai, server.base);
    else if (r < 0.78) await badRequest(server.base);
    else if (r < 0.84) await rawRefusal(server.port);
    else if (r < 0.86) await slowClient(server.port);
    else if (r < 0.94) await tokenizeRoundTrip(server.base);
    else await health(server.base);
  }
}

const started = Date.now();
const server = await startServer();
let crashed = null;
server.exited.then(({ code, signal }) => {
  if (!stopping) crashed = `the server exited (${code ?? signal}) during the soak: ${server.stderr().slice(-2000)}`;
});
let stopping = false;
const samples = [];
const sampler = setInterval(() => samples.push(rssMiB(server.child.pid)), 1000);
samples.push(rssMiB(server.child.pid));
const until = Date.now() + durationS * 1000;
const progress = setInterval(() => {
  const left = Math.max(0, Math.round((until - Date.now()) / 1000));
  console.error(`soak: ${counts.served} served, ${counts.unexpected.length} unexpected, RSS ${samples.at(-1)?.toFixed(1)} MiB, ${left} s left`);
}, 60000);
await Promise.all(Array.from({ length: clients }, () => client(server, until)));
clearInterval(progress);
await new Promise((res) => setTimeout(res, 1500));  // cancelled generations wind down
samples.push(rssMiB(server.child.pid));
clearInterval(sampler);
stopping = true;
server.child.kill('SIGTERM');
const stopped = await server.exited;

// The same requests, one by one, on a fresh server (at most --compare of them, spread evenly).
const fresh = await startServer();
const freshClient = new OpenAI({ baseURL: `${fresh.base}/v1`, apiKey: 'unused', maxRetries: 0 });
let compared = 0;
const every = [...answers];
const step = Math.max(1, every.length / compareAtMost);
const chosen = [];
for (let i = 0; i < every.length && chosen.length < compareAtMost; i += step) chosen.push(every[Math.floor(i)]);
for (const [key, text] of chosen) {
  const [chat, body] = JSON.parse(key);
  try {
    const r = chat ? await freshClient.chat.completions.create({ ...body, model: 'm' }) : await freshClient.completions.create({ ...body, model: 'm' });
    const again = chat ? r.choices[0].message.content ?? '' : r.choices[0].text;
    ++compared;
    if (again !== text) differences.push({ key, first: text, now: again, fresh: true });
  } catch (e) {
    unexpected('fresh server', `${e.status ?? ''} ${e.message}`);
  }
}
fresh.child.kill('SIGTERM');
await fresh.exited;

const valid = samples.filter((x) => Number.isFinite(x));
const warmIndex = Math.min(valid.length - 1, Math.max(1, Math.floor(valid.length / 10)));
const rss = { start: valid[0], warm: valid[warmIndex], peak: Math.max(...valid), end: valid.at(-1) };
const growth = rss.end - rss.warm;
const failures = [];
if (crashed) failures.push(crashed);
if (stopped.code !== 0) failures.push(`the server did not exit 0 on SIGTERM (${stopped.code ?? stopped.signal})`);
if (differences.length) failures.push(`${differences.length} answers differ`);
if (counts.unexpected.length) failures.push(`${counts.unexpected.length} unexpected answers`);
if (!(growth <= maxGrowthMiB)) failures.push(`RSS grew ${growth.toFixed(1)} MiB after warm-up (bound ${maxGrowthMiB} MiB)`);

const minutes = ((Date.now() - started) / 60000).toFixed(1);
console.log(`soak: ${o.model}, ${durationS} s of load by ${clients} clients (${minutes} min with the comparison)`);
console.log(`served: ${counts.served} (plus ${counts.cancelled} cancelled by their client)`);
console.log('refused by kind:');
for (const [kind, n] of [...counts.refused].sort((a, b) => b[1] - a[1])) console.log(`  ${String(n).padStart(7)}  ${kind}`);
console.log(`RSS MiB: start ${rss.start.toFixed(1)}, after warm-up ${rss.warm.toFixed(1)}, peak ${rss.peak.toFixed(1)}, end ${rss.end.toFixed(1)} (${valid.length} samples, growth bound ${maxGrowthMiB} MiB after warm-up)`);
console.log(`answers: ${answers.size} distinct repeatable requests, ${repeats} answered again during the soak; ${compared} compared with a fresh server; differences: ${differences.length}`);
for (const d of differences.slice(0, 10)) console.log(`  ${d.key}: ${JSON.stringify(d.first)} then ${JSON.stringify(d.now)}${d.fresh ? ' (fresh server)' : ''}`);
for (const u of counts.unexpected.slice(0, 10)) console.log(`  unexpected: ${u}`);
console.log(failures.length ? `FAILED: ${failures.join('; ')}` : 'OK');
process.exit(failures.length ? 1 : 0);
