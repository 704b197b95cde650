// What every serve test shares: starting `stormo serve` on a free loopback port with the demo model,
// the OpenAI client from the node_modules ctest installed (STORMO_NODE_MODULES), raw HTTP helpers.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';

const nodeModules = process.env.STORMO_NODE_MODULES;
if (!nodeModules) throw new Error('STORMO_NODE_MODULES must name the node_modules holding openai (ctest sets it)');
const require = createRequire(path.join(nodeModules, 'index.js'));
export const OpenAI = require('openai').default;

export const STORMO = process.env.STORMO_CLI;
export const DEMO = process.env.STORMO_DEMO_MODEL;
if (!STORMO || !DEMO) throw new Error('STORMO_CLI and STORMO_DEMO_MODEL must be set (ctest sets them)');

// Another shipped demo model, by its directory's name (qwen3-moe-demo, glm-moe-dsa-demo, ...).
export function demoModel(name) {
  return path.join(path.dirname(DEMO), name);
}

// Starts the server; resolves once /health answers 200. `args` are extra options; `model` another
// model directory than the gpt-oss demo.
export async function startServer(args = [], { model = DEMO } = {}) {
  const child = spawn(STORMO, ['serve', '--model', model, '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(stderr);
      if (m) resolve(Number(m[1]));
    });
    exited.then(({ code }) => reject(new Error(`stormo serve exited (${code}) before listening: ${stderr}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; ++i) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r && r.status === 200) break;
    if (i > 300) throw new Error(`/health never became 200: ${stderr}`);
    await new Promise((res) => setTimeout(res, 20));
  }
  // /health can answer before the log lines written ahead of it reach this end of the pipe: the
  // start-up lines end with 'ready: ...', so once it is here every line before it is too.
  await waitFor(() => /ready: /.test(stderr), `the 'ready:' line on stderr (got: ${stderr})`);
  return {
    child,
    port,
    base,
    exited,
    stderr: () => stderr,
    client: (options = {}) => new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, ...options }),
    // SIGTERM; resolves with the exit code and signal.
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

// POST JSON (or a raw string) and return { status, headers, json, text }.
export async function post(base, route, body, headers = {}) {
  const r = await fetch(`${base}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, headers: r.headers, json, text };
}

// A raw TCP exchange: sends `data`, returns everything the server sent until it closed.
export function rawExchange(port, data, { timeoutMs = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${timeoutMs} ms; got: ${received.slice(0, 200)}`));
    }, timeoutMs);
    socket.on('connect', () => socket.write(data));
    socket.on('data', (chunk) => (received += chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
  });
}

// The metric's value from /metrics text (labels included in `name`, e.g. 'stormo_requests_total{outcome="ok"}').
export async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const line of text.split('\n')) if (line.startsWith(name + ' ')) return Number(line.slice(name.length + 1));
  throw new Error(`no metric ${name} in:\n${text}`);
}

// The OpenAI error shape every refusal has.
export function assertErrorShape(assert, body, param) {
  assert.ok(body && body.error, `an {"error": ...} body: ${JSON.stringify(body)}`);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.equal(typeof body.error.type, 'string');
  assert.ok('param' in body.error && 'code' in body.error);
  if (param !== undefined) assert.equal(body.error.param, param);
}

// Polls `predicate` every 20 ms until it holds, or fails the test naming `what` after `ms`.
export async function waitFor(predicate, what, ms = 5000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}
