#!/usr/bin/env bash
# The prompt cache against a cold prefill, in one run: time to first token of requests that share a
# long prefix (PREFIX_TOKENS, 2048 by default) and differ only in their last words, on
# `stormo serve --cache-dir DIR`:
#   cold    the first request, the cache directory empty;
#   memory  another suffix, the same server: the prefix from memory;
#   disk    another suffix after a restart on the same directory (the page cache dropped when
#           root): the prefix from the disk;
#   cold2   another suffix after a restart on an empty directory: a cold prefill again, the
#           check that the restart itself is not what the disk hit saves.
#
#   scripts/race-prompt-cache.sh STORMO MODEL
#
# Each request is one streamed /v1/completions of GEN_TOKENS (8) tokens (temperature 0, ignore_eos)
# driven by scripts/serve-streams.mjs (--streams 1 --warmup 0, the same --salt and --prompt-words,
# --suffix per phase); the prefix's length in words is found once with the first server's /tokenize.
# Printed: each phase's time to first token, the prompt and cached tokens the server reported, and
# the cold time over each phase's. THREADS (2), CTX (PREFIX_TOKENS + 256), PORT (18490),
# CACHE_SIZE (8GiB), HEALTH_TIMEOUT (1800 s), KEEP=DIR keeps the logs and JSON, CAP=SIZE runs the
# server under a cgroup v1 memory cap (race-common.sh).
set -euo pipefail

if [ $# -lt 2 ]; then
    sed -n '2,22p' "$0" >&2
    exit 2
fi
STORMO=$1 MODEL=$2
PREFIX=${PREFIX_TOKENS:-2048} TG=${GEN_TOKENS:-8} THREADS=${THREADS:-2}
CTX=${CTX:-$((PREFIX + 256))} PORT=${PORT:-18490} HEALTH_TIMEOUT=${HEALTH_TIMEOUT:-1800}
CACHE_SIZE=${CACHE_SIZE:-8GiB} CAP=${CAP:-} KEEP=${KEEP:-}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$STORMO" ] || { echo "race-prompt-cache: $STORMO is not an executable" >&2; exit 2; }
command -v node > /dev/null || { echo "race-prompt-cache: node is needed (scripts/serve-streams.mjs)" >&2; exit 2; }

OUT=$(mktemp -d)
GROUP=/sys/fs/cgroup/memory/stormo-race-prompt-cache-$$
RACE_NAME=race-prompt-cache
. "$HERE/race-common.sh"
end_race_on_exit
make_cap_group

serve() {
    local name=$1 dir=$2
    start_server "$name" "$STORMO" serve --model "$MODEL" --port "$PORT" --threads "$THREADS" --context "$CTX" \
        --parallel 1 --cache-dir "$dir" --cache-size "$CACHE_SIZE"
    wait_healthy "$name" "$PORT"
}

WORDS=""
ask() {
    local name=$1 suffix=$2
    local words_arg=()
    [ -n "$WORDS" ] && words_arg=(--prompt-words "$WORDS")
    node "$HERE/serve-streams.mjs" --url "http://127.0.0.1:$PORT" --streams 1 --warmup 0 --salt 5 \
        --prompt-tokens "$PREFIX" --gen-tokens "$TG" --suffix "$suffix" "${words_arg[@]}" --json > "$OUT/$name.json"
    WORDS=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).prompt_words)' "$OUT/$name.json")
}

mkdir "$OUT/cache" "$OUT/empty"
serve first "$OUT/cache"
ask cold "question one"
ask memory "question two"
stop_server
serve restarted "$OUT/cache"
ask disk "question three"
stop_server
serve fresh "$OUT/empty"
ask cold2 "question four"
stop_server

node - "$OUT" <<'JS'
const fs = require('fs');
const dir = process.argv[2];
const phase = (name) => JSON.parse(fs.readFileSync(`${dir}/${name}.json`)).requests[0];
const cold = phase('cold').ttft_ms;
console.log('phase    ttft_s   prompt_tokens  cached_tokens  cold/phase');
for (const name of ['cold', 'memory', 'disk', 'cold2']) {
  const r = phase(name);
  console.log(`${name.padEnd(8)} ${(r.ttft_ms / 1000).toFixed(2).padStart(7)}  ${String(r.prompt_tokens).padStart(13)}  ` +
              `${String(r.cached_tokens).padStart(13)}  ${(cold / r.ttft_ms).toFixed(1).padStart(9)}x`);
}
JS
du -sh "$OUT/cache" | sed 's/^/cache directory after the run: /'
