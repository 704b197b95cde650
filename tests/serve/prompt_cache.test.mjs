// The prompt cache (--cache-dir): a long prompt's prefix computed by one server is restored by the
// next one started on the same directory (usage.prompt_tokens_details.cached_tokens, streamed too),
// and the answer is a cold server's; two API keys never share a prefix (from the cache or a slot's
// KV) unless --cache-share; /metrics counts the lookups, hits and blocks; start-up says what the
// directory held; servers killed while they write leave nothing that loads wrong.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';

import { metric, post, startServer } from './support.mjs';

const dirs = [];
function cacheDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stormo-prompt-cache-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

// A prefix of more than two 256-position blocks of the demo's characters, and suffixes after it.
const prefix = 'copy:' + 'abcdefghijklmnopqrstuvwxyz'.repeat(21);
const completion = (suffix, extra = {}) => ({ model: 'demo', prompt: prefix + suffix + '=', max_tokens: 12, ...extra });

async function withServer(args, fn) {
  const server = await startServer(args);
  try {
    return await fn(server);
  } finally {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr());
  }
}

async function complete(server, body, headers = {}) {
  const got = await post(server.base, '/v1/completions', body, headers);
  assert.equal(got.status, 200, got.text);
  return got.json;
}

test('a prefix computed before a restart is restored, and the answer is a cold server\'s', async () => {
  const dir = cacheDir();
  const cold = await withServer([], (s) => complete(s, completion('xyz')));
  assert.equal(cold.usage.prompt_tokens_details.cached_tokens, 0);

  await withServer(['--cache-dir', dir, '--cache-size', '256MiB'], async (s) => {
    assert.match(s.stderr(), /prompt cache .*: 0 blocks, 0 B/);
    const first = await complete(s, completion('qrs'));
    assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0);
    assert.ok((await metric(s.base, 'stormo_prompt_cache_blocks_written_total')) >= 2);
    assert.ok((await metric(s.base, 'stormo_prompt_cache_disk_blocks')) >= 2);
  });

  await withServer(['--cache-dir', dir, '--cache-size', '256MiB', '--cache-memory', '64MiB'], async (s) => {
    assert.match(s.stderr(), /prompt cache .*: [1-9]\d* blocks?, /);
    const warm = await complete(s, completion('xyz'));
    assert.ok(warm.usage.prompt_tokens_details.cached_tokens >= 512, JSON.stringify(warm.usage));
    assert.equal(warm.usage.prompt_tokens, cold.usage.prompt_tokens);
    assert.equal(warm.choices[0].text, cold.choices[0].text);
    assert.equal(warm.choices[0].finish_reason, cold.choices[0].finish_reason);
    assert.ok((await metric(s.base, 'stormo_prompt_cache_block_hits_total{tier="disk"}')) >= 2);
    assert.ok((await metric(s.base, 'stormo_prompt_cache_positions_restored_total')) >= 512);
    assert.equal(await metric(s.base, 'stormo_prompt_cache_lookups_total'), 1);
    for (const name of ['blocks_evicted_total', 'blocks_dropped_total', 'write_errors_total', 'disk_bytes', 'memory_bytes'])
      assert.ok((await metric(s.base, `stormo_prompt_cache_${name}`)) >= 0, name);

    // Streamed, with the final usage chunk: the same count, from the same cache (memory now).
    const r = await fetch(`${s.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'demo', max_tokens: 4, stream: true, stream_options: { include_usage: true },
        messages: [{ role: 'user', content: prefix + 'chat=' }],
      }),
    });
    assert.equal(r.status, 200);
    const events = (await r.text()).split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
    const usage = events.at(-1).usage;
    assert.ok(usage, 'a final usage chunk');
    assert.ok('cached_tokens' in usage.prompt_tokens_details);
  });
});

test('two API keys never share a prefix unless --cache-share', async () => {
  const k1 = { authorization: 'Bearer key-one' }, k2 = { authorization: 'Bearer key-two' };
  const keys = ['--api-key', 'key-one', '--api-key', 'key-two'];
  await withServer([...keys, '--cache-dir', cacheDir(), '--parallel', '1'], async (s) => {
    assert.equal((await complete(s, completion('aaa'), k1)).usage.prompt_tokens_details.cached_tokens, 0);
    // The other key: neither the slot's KV nor the cache's blocks.
    assert.equal((await complete(s, completion('bbb'), k2)).usage.prompt_tokens_details.cached_tokens, 0);
    // Each key finds its own.
    assert.ok((await complete(s, completion('ccc'), k1)).usage.prompt_tokens_details.cached_tokens >= 512);
    assert.ok((await complete(s, completion('ddd'), k2)).usage.prompt_tokens_details.cached_tokens >= 512);
    const refused = await post(s.base, '/v1/completions', completion('eee'), { authorization: 'Bearer key-three' });
    assert.equal(refused.status, 401);
  });
  await withServer([...keys, '--cache-dir', cacheDir(), '--cache-share', '--parallel', '1'], async (s) => {
    assert.equal((await complete(s, completion('aaa'), k1)).usage.prompt_tokens_details.cached_tokens, 0);
    assert.ok((await complete(s, completion('bbb'), k2)).usage.prompt_tokens_details.cached_tokens >= 512);
  });
});

// Servers killed (SIGKILL) at random moments while they write blocks: the next one removes what
// the kills left half-written, drops no block, and answers each prompt as a cold server does.
test('a server killed at any moment leaves no block that loads wrong', async () => {
  const dir = cacheDir();
  const variants = [0, 1, 2, 3, 4, 5].map((i) => ({
    model: 'demo', max_tokens: 6,
    prompt: 'copy:' + 'abcdefghijklmnopqrstuvwxyz'.repeat(21).slice(i) + 'end' + i + '=',
  }));
  const cold = await withServer([], async (s) => Promise.all(variants.map((v) => complete(s, v))));
  for (let round = 0; round < variants.length; ++round) {
    const server = await startServer(['--cache-dir', dir]);
    post(server.base, '/v1/completions', variants[round]).catch(() => {});
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 120)));
    server.child.kill('SIGKILL');
    await server.exited;
  }
  await withServer(['--cache-dir', dir], async (s) => {
    const leftovers = [];
    const walk = (d) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(path.join(d, e.name));
        else if (e.name.includes('.stormo-tmp-')) leftovers.push(e.name);
      }
    };
    walk(dir);
    assert.deepEqual(leftovers, []);
    for (let i = 0; i < variants.length; ++i) {
      const warm = await complete(s, variants[i]);
      assert.equal(warm.choices[0].text, cold[i].choices[0].text, `variant ${i}`);
    }
    assert.equal(await metric(s.base, 'stormo_prompt_cache_blocks_dropped_total'), 0);
  });
});

test('cache options without --cache-dir are refused', async () => {
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(process.env.STORMO_CLI, ['serve', '--model', process.env.STORMO_DEMO_MODEL, '--cache-share'], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /--cache-dir/);
});
