#!/usr/bin/env node
// N users at once on any OpenAI-compatible server (`stormo serve`, llama-server): N clients start
// together, each sends ONE streamed completion of its own prompt (about P tokens) asking for exactly
// G tokens (ignore_eos, temperature 0), and the run is measured from the client's side:
//
//   node scripts/serve-streams.mjs --url http://127.0.0.1:8080 --streams 1,2,4,8 --prompt-tokens 64
//        --gen-tokens 32 [--prompt-words W] [--salt S] [--endpoint completions|chat] [--warmup 0|1]
//        [--api-key KEY] [--label NAME] [--suffix TEXT] [--json]
//
// Several N in --streams run one after another against the same server (each with fresh prompts).
// Before each run, one unmeasured warm-up request (its own prompt, 2 tokens) unless --warmup 0.
// No dependencies beyond Node 18+ (fetch and streams are built in).
//
// The prompts: stream i of a run of N streams gets space-separated three-digit numbers drawn from a
// generator seeded by (salt, N, i); the first number differs between the streams of a run, so no
// two prompts share even their first token (no prefix cache helps one from another; up to 9
// streams with a vocabulary of single characters, 900 with one of digit groups), and the
// prompts do not depend on the server, so two servers given the same --prompt-words, --salt and
// N get byte for byte the same text. --prompt-words W fixes the prompt's length in words; without
// it, the server's POST /tokenize (stormo's and llama-server's take {"content"}) finds the number of
// words whose text is at most --prompt-tokens tokens, and the JSON says which W it chose
// (`prompt_words`) so that the next server can be given the same.
//
// --suffix TEXT is appended to every measured prompt (after a space): runs with the same --salt,
// --prompt-words and N but other suffixes send prompts that share everything but their ends, as
// requests sharing a system prompt do (scripts/race-prompt-cache.sh).
//
// Per request: ttft (from the common start to the first chunk carrying text, or the finish chunk if
// that comes first), last token (the chunk with finish_reason, which both servers send with or right
// after the last token; else [DONE]), end (the stream's [DONE]), and the completion and prompt tokens
// the server's usage chunk reports (stream_options.include_usage; llama-server's last chunk carries
// usage too; a stream llama-server fails counts its text chunks instead, see stream()). A token
// whose text ends inside a UTF-8 character, or has none (a special token),
// reaches the client with a later one on both servers, so a first chunk may come a token late.
//
// The figures of a run of N streams:
//   decode tok/s (aggregate) = sum over streams of (completion_tokens - 1)
//                              / (latest last-token time - earliest first-token time)
//     i.e. every token after each stream's first, over the wall time from the first first token to
//     the last token of all streams (any stream's prefill that falls in that window counts in it);
//   decode tok/s with all streams decoding = the text chunks (tokens, below) that arrive after the
//     last stream's first token and no later than the first stream's last token, over that
//     window: the decode of N sequences at once with no prompt left to compute, on any server
//     (one that computes every prompt first and one that interleaves prompt chunks with decode
//     steps alike); null when a stream ends before the last one starts. A chunk is counted as one
//     token: a token whose text ends inside a UTF-8 character comes with the next one, so this
//     can count a little less than was generated (`chunks_per_token` gives the whole run's ratio);
//   generated tok/s (end to end) = sum of completion_tokens / (latest end - start);
//   ttft mean and max; each request's latency (start to its [DONE]).
// When the server has stormo's GET /metrics (Prometheus text), it is read before the run, when every
// stream has its first token, and after the run; the counters' differences are reported
// (`metrics_delta`, every `*_total` counter the server has, whatever their names) and
//   expert_bytes_read_per_token = delta stormo_expert_bytes_read_total (experts read from disk, prefill
//     and decode) / sum of completion_tokens;
//   expert_bytes_read_per_decode_token = the same from the snapshot at the last first token to the
//     end, over stormo_generated_tokens_total's difference in that window: given only when that
//     snapshot was read while every stream still ran and the server's counters move while requests
//     run (their generated-token count had moved by at least N), else null (a server that
//     publishes its counters at a request's end, or a stream that ended before the others began).
// Every other counter whose name has "expert" in it is also divided by the completion tokens
// (`per_token`), so counters a later stormo adds show up without a change here.
import { parseArgs } from 'node:util';

const { values: o } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    streams: { type: 'string', default: '1,2,4,8' },
    'prompt-tokens': { type: 'string', default: '64' },
    'gen-tokens': { type: 'string', default: '32' },
    'prompt-words': { type: 'string' },
    salt: { type: 'string', default: '0' },
    endpoint: { type: 'string', default: 'completions' },
    warmup: { type: 'string', default: '1' },
    'api-key': { type: 'string' },
    label: { type: 'string', default: '' },
    timeout: { type: 'string', default: '3600' },
    suffix: { type: 'string', default: '' },
    json: { type: 'boolean', default: false },
  },
});

function die(message) {
  console.error(`serve-streams: ${message}`);
  process.exit(2);
}
function positive(name, text) {
  const v = Number(text);
  if (!Number.isInteger(v) || v < 1) die(`${name} must be a positive integer, not '${text}'`);
  return v;
}
const base = o.url.replace(/\/$/, '');
const streamsList = o.streams.split(/[\s,]+/).filter(Boolean).map((s) => positive('--streams', s));
if (streamsList.length === 0) die('--streams names no stream count');
const promptTokens = positive('--prompt-tokens', o['prompt-tokens']);
const genTokens = positive('--gen-tokens', o['gen-tokens']);
const salt = Number(o.salt);
if (!Number.isInteger(salt) || salt < 0) die(`--salt must be a whole number, not '${o.salt}'`);
const timeoutMs = positive('--timeout', o.timeout) * 1000;
if (!['completions', 'chat'].includes(o.endpoint)) die(`--endpoint must be completions or chat, not '${o.endpoint}'`);
if (!['0', '1'].includes(o.warmup)) die(`--warmup must be 0 or 1, not '${o.warmup}'`);
const headers = { 'Content-Type': 'application/json' };
if (o['api-key']) headers.Authorization = `Bearer ${o['api-key']}`;

// splitmix32: a small seeded generator, so the prompts are the same on every machine and Node.
function generator(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}
// Stream `i` of a run of `n` streams (n 0: the warm-up, which starts with a letter). The first
// number's first digit differs between the first 9 streams of a run (a character-level vocabulary's
// first token) and the whole number between its first 900 (a vocabulary of digit groups').
function promptText(n, i, words) {
  const next = generator(Math.imul(salt + 1, 0x27d4eb2f) ^ Math.imul(n + 1, 0x165667b1) ^ Math.imul(i + 1, 0x9e3779b1));
  const offset = generator(Math.imul(salt + 1, 0x27d4eb2f) ^ Math.imul(n + 1, 0x165667b1))();
  const out = [String(100 * (1 + ((offset + i) % 9)) + ((offset + i) % 100))];
  while (out.length < words) out.push(String(100 + (next() % 900)));
  return (n === 0 ? 'x ' : '') + out.join(' ') + (n !== 0 && o.suffix ? ' ' + o.suffix : '');
}

async function call(path, init = {}) {
  const res = await fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(timeoutMs), ...init });
  return res;
}

async function tokenCount(text) {
  const res = await call('/tokenize', { method: 'POST', body: JSON.stringify({ content: text, add_special: false }) });
  if (!res.ok) throw new Error(`POST /tokenize answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
  const body = await res.json();
  if (!Array.isArray(body.tokens)) throw new Error('POST /tokenize answered without a "tokens" list');
  return body.tokens.length;
}

// The most words whose prompt (stream 0 of a run of 1) is at most P tokens, at least 1.
async function calibrateWords() {
  const per = (await tokenCount(promptText(1, 0, 64))) / 64;
  let words = Math.max(1, Math.floor(promptTokens / per));
  while (words > 1 && (await tokenCount(promptText(1, 0, words))) > promptTokens) --words;
  while ((await tokenCount(promptText(1, 0, words + 1))) <= promptTokens) ++words;
  return words;
}

// Prometheus text: `name{labels} value` lines; the names of counters from their # TYPE lines.
async function readMetrics() {
  let res;
  try {
    res = await call('/metrics');
  } catch {
    return null;
  }
  if (!res.ok) return null;
  const text = await res.text();
  const values = new Map();
  const counters = new Set();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) counter/.exec(line);
    if (type) counters.add(type[1]);
    if (line === '' || line.startsWith('#')) continue;
    const m = /^(\S+?)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (m && Number.isFinite(Number(m[3]))) values.set(m[1] + (m[2] ?? ''), { family: m[1], value: Number(m[3]) });
  }
  return values.size > 0 ? { values, counters } : null;
}
function metricValue(snapshot, name) {
  return snapshot?.values.get(name)?.value;
}

function requestBody(text, maxTokens) {
  const common = {
    model: 'any',
    max_tokens: maxTokens,
    temperature: 0,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  };
  return o.endpoint === 'chat' ? { ...common, messages: [{ role: 'user', content: text }] } : { ...common, prompt: text };
}
function chunkText(chunk) {
  const choice = chunk.choices?.[0];
  if (!choice) return '';
  if (o.endpoint === 'chat') return (choice.delta?.content ?? '') + (choice.delta?.reasoning_content ?? '');
  return choice.text ?? '';
}

const finalParseFailure = (error) => /does not match the expected .* format/.test(error?.message ?? '');

// One streamed request; times in ms from `start`. `onFirst` is called at its first text chunk.
async function stream(text, maxTokens, start, onFirst) {
  const r = {
    ttft_ms: null,
    last_token_ms: null,
    end_ms: null,
    completion_tokens: null,
    prompt_tokens: null,
    cached_tokens: null,
    chunk_ms: [],
  };
  const path = o.endpoint === 'chat' ? '/v1/chat/completions' : '/v1/completions';
  const res = await call(path, { method: 'POST', body: JSON.stringify(requestBody(text, maxTokens)) });
  if (!res.ok) throw new Error(`POST ${path} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  const decoder = new TextDecoder();
  let buffer = '';
  let done = false;
  for await (const bytes of res.body) {
    buffer += decoder.decode(bytes, { stream: true });
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') {
          done = true;
          continue;
        }
        const chunk = JSON.parse(data);
        if (chunk.error && finalParseFailure(chunk.error) && r.ttft_ms !== null) {
          // llama-server (b10472) parses the answer so far and fails the stream when a
          // random-weight answer ends inside a UTF-8 character ("does not match the expected
          // Content-only format"). That can happen long before max_tokens (its log shows answers
          // of about ten tokens failed so, their streams ending seconds before the others'), so
          // the stream ends here and counts the tokens it delivered: its text chunks (a chunk can
          // carry two tokens, so this may count a little less than was generated).
          r.last_token_ms = performance.now() - start;
          r.completion_tokens = r.chunk_ms.length;
          r.final_parse_failed = true;
          done = true;
          continue;
        }
        if (chunk.error) throw new Error(`the stream carried an error: ${JSON.stringify(chunk.error).slice(0, 300)}`);
        const now = performance.now() - start;
        const finished = chunk.choices?.[0]?.finish_reason;
        const hasText = chunkText(chunk) !== '';
        if (hasText || finished) {
          if (hasText) r.chunk_ms.push(now);
          if (r.ttft_ms === null) {
            r.ttft_ms = now;
            onFirst?.();
          }
          if (finished) r.last_token_ms = now;
        }
        if (chunk.usage) {
          r.completion_tokens = chunk.usage.completion_tokens;
          r.prompt_tokens = chunk.usage.prompt_tokens;
          r.cached_tokens = chunk.usage.prompt_tokens_details?.cached_tokens ?? null;
        }
      }
    }
  }
  r.end_ms = performance.now() - start;
  if (!done) throw new Error('the stream ended without data: [DONE]');
  if (r.ttft_ms === null) throw new Error('the stream carried no text and no finish_reason');
  r.last_token_ms ??= r.end_ms;
  if (r.completion_tokens === null) throw new Error('the stream carried no usage (stream_options.include_usage)');
  return r;
}

const round = (x, digits = 1) => (x === null || x === undefined || !Number.isFinite(x) ? null : +x.toFixed(digits));

async function runStreams(n, words) {
  if (o.warmup === '1') await stream(promptText(0, n, words), 2, performance.now());
  const before = await readMetrics();
  let firsts = 0;
  let ended = 0;
  let mid = null;
  let midPromise = null;
  const start = performance.now();
  const requests = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      stream(promptText(n, i, words), genTokens, start, () => {
        if (++firsts === n && before && ended === 0)
          midPromise = readMetrics().then((m) => (mid = ended === 0 ? m : null));
      }).then((r) => {
        ++ended;
        return r;
      }),
    ),
  );
  if (midPromise) await midPromise;
  const after = before ? await readMetrics() : null;

  const sum = (f) => requests.reduce((a, r) => a + f(r), 0);
  const completion = sum((r) => r.completion_tokens);
  const firstFirst = Math.min(...requests.map((r) => r.ttft_ms));
  const lastLast = Math.max(...requests.map((r) => r.last_token_ms));
  const lastEnd = Math.max(...requests.map((r) => r.end_ms));
  const decodeWindow = lastLast - firstFirst;
  const allDecoding = Math.max(...requests.map((r) => r.ttft_ms));
  const firstLast = Math.min(...requests.map((r) => r.last_token_ms));
  const steadyWindow = firstLast - allDecoding;
  const steadyTokens = sum((r) => r.chunk_ms.filter((t) => t > allDecoding && t <= firstLast).length);
  const report = {
    label: o.label,
    url: base,
    endpoint: o.endpoint,
    streams: n,
    prompt_words: words,
    gen_tokens: genTokens,
    completion_tokens: completion,
    prompt_tokens: sum((r) => r.prompt_tokens ?? 0),
    decode_tokens: completion - n,
    decode_window_s: round(decodeWindow / 1000, 3),
    decode_tokens_per_s: decodeWindow > 0 ? round(((completion - n) * 1000) / decodeWindow, 2) : null,
    all_decoding_window_s: steadyWindow > 0 ? round(steadyWindow / 1000, 3) : null,
    all_decoding_tokens: steadyWindow > 0 ? steadyTokens : null,
    all_decoding_tokens_per_s: steadyWindow > 0 ? round((steadyTokens * 1000) / steadyWindow, 2) : null,
    chunks_per_token: round(sum((r) => r.chunk_ms.length) / completion, 3),
    generated_tokens_per_s: round((completion * 1000) / lastEnd, 2),
    wall_s: round(lastEnd / 1000, 3),
    ttft_ms_mean: round(sum((r) => r.ttft_ms) / n),
    ttft_ms_max: round(Math.max(...requests.map((r) => r.ttft_ms))),
    latency_ms_mean: round(sum((r) => r.end_ms) / n),
    latency_ms_max: round(lastEnd),
    requests: requests.map((r, i) => ({
      stream: i,
      prompt_tokens: r.prompt_tokens,
      cached_tokens: r.cached_tokens,
      completion_tokens: r.completion_tokens,
      ttft_ms: round(r.ttft_ms),
      last_token_ms: round(r.last_token_ms),
      latency_ms: round(r.end_ms),
      ...(r.final_parse_failed ? { final_parse_failed: true } : {}),
    })),
    final_parse_failures: requests.filter((r) => r.final_parse_failed).length,
    metrics: null,
  };
  if (before && after) {
    const delta = {};
    for (const [key, { family, value }] of after.values) {
      const was = before.values.get(key)?.value;
      if (was !== undefined && (after.counters.has(family) || family.endsWith('_total'))) delta[key] = value - was;
    }
    const perToken = {};
    for (const [key, d] of Object.entries(delta)) if (key.includes('expert')) perToken[key] = completion > 0 ? d / completion : null;
    const bytes = (s) => metricValue(s, 'stormo_expert_bytes_read_total');
    const generated = (s) => metricValue(s, 'stormo_generated_tokens_total');
    let decodeBytes = null;
    const live = mid && generated(mid) !== undefined && generated(mid) - generated(before) >= n;
    if (live && bytes(after) !== undefined && generated(after) > generated(mid))
      decodeBytes = (bytes(after) - bytes(mid)) / (generated(after) - generated(mid));
    report.metrics = {
      metrics_delta: delta,
      per_token: perToken,
      expert_bytes_read_per_token: bytes(after) !== undefined ? round((bytes(after) - bytes(before)) / completion, 0) : null,
      expert_bytes_read_per_decode_token: round(decodeBytes, 0),
      counters_live_during_run: Boolean(live),
    };
  }
  return report;
}

function describe(r) {
  const lines = [
    `${r.label ? r.label + ': ' : ''}${r.streams} stream(s), ${r.prompt_tokens} prompt tokens and ${r.completion_tokens} generated in ${r.wall_s} s: ` +
      `decode ${r.decode_tokens_per_s} tok/s aggregate (${r.decode_tokens} tokens after each stream's first over ${r.decode_window_s} s), ` +
      `${r.all_decoding_tokens_per_s ?? 'n/a'} tok/s with all streams decoding (${r.all_decoding_tokens ?? 0} text chunks over ` +
      `${r.all_decoding_window_s ?? 0} s; ${r.chunks_per_token} chunks a token), ` +
      `${r.generated_tokens_per_s} tok/s end to end; time to first token mean ${r.ttft_ms_mean} ms, max ${r.ttft_ms_max} ms; ` +
      `latency mean ${r.latency_ms_mean} ms, max ${r.latency_ms_max} ms`,
  ];
  for (const q of r.requests)
    lines.push(
      `  stream ${q.stream}: ${q.prompt_tokens} prompt, ${q.completion_tokens} generated, first token ${q.ttft_ms} ms, ` +
        `last ${q.last_token_ms} ms, done ${q.latency_ms} ms`,
    );
  if (r.metrics)
    lines.push(
      `  expert bytes read from disk per generated token: ${r.metrics.expert_bytes_read_per_token} (decode window: ` +
        `${r.metrics.expert_bytes_read_per_decode_token ?? 'n/a, counters not live during the run'})` +
        Object.entries(r.metrics.per_token)
          .filter(([k]) => k !== 'stormo_expert_bytes_read_total')
          .map(([k, v]) => `; ${k} ${round(v, 3)}`)
          .join(''),
    );
  return lines.join('\n');
}

let health;
try {
  health = await call('/health');
} catch (e) {
  die(`${base}/health does not answer: ${e.cause?.message ?? e.message}`);
}
if (!health.ok) die(`${base}/health answered ${health.status}: the server is not ready`);
let words;
try {
  words = o['prompt-words'] !== undefined ? positive('--prompt-words', o['prompt-words']) : await calibrateWords();
} catch (e) {
  die(`cannot size the prompts with ${base}/tokenize (give --prompt-words): ${e.message}`);
}
const reports = [];
for (const n of streamsList) {
  try {
    const r = await runStreams(n, words);
    reports.push(r);
    if (!o.json) console.log(describe(r));
  } catch (e) {
    console.error(`serve-streams: ${n} stream(s) against ${base}: ${e.message}`);
    process.exit(1);
  }
}
if (o.json) console.log(JSON.stringify(reports.length === 1 ? reports[0] : reports));
