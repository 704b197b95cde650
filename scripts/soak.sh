#!/bin/sh
# A soak of `stormo serve` (not part of ctest): the server under mixed load for a set time, then
# every answer it gave compared with a fresh server's answer to the same request.
#
#   scripts/soak.sh [DURATION] [MODEL_DIR] [-- options of scripts/soak.mjs]
#
# DURATION is seconds or minutes with a suffix (90, 90s, 30m; default 30m); MODEL_DIR defaults to
# models/gpt-oss-demo. Options after `--`: --clients N (default 6), --max-growth MiB (default 64),
# --compare N (requests replayed on the fresh server, default 2000), --seed N, --stormo PATH
# (default build/bin/stormo), --serve-args 'OPTIONS' (more serve options for both servers, e.g.
# '--parallel 4 --speculate auto --cache-dir DIR'). The openai package comes from
# STORMO_NODE_MODULES, else build/serve-node/node_modules (ctest's serve.NpmCi fixture installs it).
#
# The load, from N clients at once: chats and text completions streamed and not (greedy, and
# sampled with a seed), multi-turn chats, requests cancelled mid-way, bad requests (malformed JSON,
# wrong types, n > 1, prompts and max_tokens past the context), oversized ones (bodies past
# --max-body, 24 KiB of short header lines), Transfer-Encoding gzip, malformed HTTP, clients that
# stall half-way through a request head, /tokenize and /detokenize round trips, /health and
# /metrics. The server's RSS is read from /proc every second.
#
# It prints the requests served, the refusals by kind, RSS at start, after warm-up (a tenth of the
# run), at its peak and at the end, and the answers that differ: between two answers to the same
# request during the soak (streamed or not, the KV cache reused or not) or from a fresh server's
# (up to --compare distinct requests, spread evenly over those made).
# Exit status 1 on any difference, a good request failed, a crash, an unclean stop on SIGTERM, or
# RSS at the end more than --max-growth MiB above the RSS after warm-up; 2 on bad usage.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
duration=30m
model=$here/../models/gpt-oss-demo
if [ $# -gt 0 ] && [ "$1" != "--" ]; then duration=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then model=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi

case $duration in
    *m) seconds=$(( ${duration%m} * 60 )) ;;
    *s) seconds=${duration%s} ;;
    *) seconds=$duration ;;
esac
case $seconds in
    ''|*[!0-9]*|0) echo "soak: the duration must be seconds or minutes (90, 90s, 30m), not '$duration'" >&2; exit 2 ;;
esac
if [ ! -d "$model" ]; then
    echo "soak: no model directory $model" >&2
    exit 2
fi
if ! command -v node >/dev/null 2>&1; then
    echo "soak: node is not installed" >&2
    exit 2
fi
exec node "$here/soak.mjs" --duration "$seconds" --model "$model" "$@"
