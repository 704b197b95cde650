#!/usr/bin/env node
// Load on a running `stormo serve` through the official OpenAI client: N clients, each sending M
// streamed chat requests one after another; prints requests/s, time to first token and latency
// percentiles (p50, p99), and how many were refused with 429.
//
//   node scripts/serve-load.mjs --url http://127.0.0.1:8080 --clients 4 --requests 10 [--max-tokens 32]
//        [--prompt "123+456="] [--api-key KEY] [--json]
//
// The openai package comes from STORMO_NODE_MODULES, else build/serve-node/node_modules (which
// ctest's serve.NpmCi fixture installs; or: npm ci --prefix build/serve-node after copying
// tests/serve/package*.json there).
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.STORMO_NODE_MODULES ?? path.join(here, '..', 'build', 'serve-node', 'node_modules');
let OpenAI;
try {
  OpenAI = createRequire(path.join(modules, 'index.js'))('openai').default;
} catch (e) {
  console.error(`serve-load: the openai package is not in ${modules} (set STORMO_NODE_MODULES): ${e.message}`);
  process.exit(2);
}

const { values: o } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    clients: { type: 'string', default: '4' },
    requests: { type: 'string', default: '10' },
    'max-tokens': { type: 'string', default: '32' },
    prompt: { type: 'string', default: '123+456=' },
    'api-key': { type: 'string', default: 'none' },
    json: { type: 'boolean', default: false },
  },
});
const clients = Number(o.clients);
const perClient = Number(o.requests);
const maxTokens = Number(o['max-tokens']);
for (const [name, v] of [['--clients', clients], ['--requests', perClient], ['--max-tokens', maxTokens]])
  if (!Number.isInteger(v) || v < 1) {
    console.error(`serve-load: ${name} must be a positive integer`);
    process.exit(2);
  }

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const latencies = [];
const firstTokens = [];
let refused = 0;
let failed = 0;
let tokens = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: clients }, async () => {
    const openai = new OpenAI({ baseURL: `${o.url.replace(/\/$/, '')}/v1`, apiKey: o['api-key'], maxRetries: 0 });
    for (let i = 0; i < perClient; ++i) {
      const t0 = performance.now();
      let first = null;
      try {
        const stream = await openai.chat.completions.create({
          model: 'any',
          messages: [{ role: 'user', content: o.prompt }],
          max_tokens: maxTokens,
          stream: true,
          stream_options: { include_usage: true },
        });
        for await (const chunk of stream) {
          if (first === null && chunk.choices[0]?.delta?.content) first = performance.now() - t0;
          if (chunk.usage) tokens += chunk.usage.completion_tokens;
        }
        latencies.push(performance.now() - t0);
        if (first !== null) firstTokens.push(first);
      } catch (e) {
        if (e.status === 429) ++refused;
        else {
          ++failed;
          console.error(`serve-load: ${e.message}`);
        }
      }
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
firstTokens.sort((a, b) => a - b);
const report = {
  clients,
  requests_per_client: perClient,
  answered: latencies.length,
  refused_429: refused,
  failed,
  seconds: +seconds.toFixed(3),
  requests_per_s: +(latencies.length / seconds).toFixed(2),
  generated_tokens_per_s: +(tokens / seconds).toFixed(1),
  ttft_ms_p50: +percentile(firstTokens, 50).toFixed(1),
  ttft_ms_p99: +percentile(firstTokens, 99).toFixed(1),
  latency_ms_p50: +percentile(latencies, 50).toFixed(1),
  latency_ms_p99: +percentile(latencies, 99).toFixed(1),
};
if (o.json) console.log(JSON.stringify(report));
else
  console.log(
    `${report.answered} answered, ${refused} refused (429), ${failed} failed in ${report.seconds} s: ` +
      `${report.requests_per_s} requests/s, ${report.generated_tokens_per_s} tokens/s; ` +
      `time to first token p50 ${report.ttft_ms_p50} ms p99 ${report.ttft_ms_p99} ms; ` +
      `latency p50 ${report.latency_ms_p50} ms p99 ${report.latency_ms_p99} ms`,
  );
process.exit(failed > 0 ? 1 : 0);
