#!/bin/bash
# usage: serve_same.sh STORMO MODEL WORKDIR
# `stormo serve --parallel 2` alone, then under `mpirun -np 3`: four concurrent completions with
# different prompts and seeds (two batched at a time, two queued behind them; one greedy, one
# speculating from its context) get the same answers from both. Then SIGTERM to rank 0 stops the
# ranks' server: every rank leaves and the launcher exits 0.
set -u
stormo=$1
model=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
. "$(dirname "$0")/serve_support.sh"

fail() {
  echo "serve_same.sh: $*"
  for f in "$work"/*.err; do echo "--- $f"; cat "$f"; done
  [ -n "${server_pid:-}" ] && kill -KILL "$server_pid" 2>/dev/null
  exit 1
}

bodies=(
  '{"prompt":"The sea is","max_tokens":12,"temperature":0.8,"seed":1,"ignore_eos":true}'
  '{"prompt":"Once upon a time","max_tokens":10,"temperature":0,"ignore_eos":true}'
  '{"prompt":"one two one two one two one two","max_tokens":12,"temperature":0,"ignore_eos":true,"speculate":"context"}'
  '{"prompt":"Numbers: 1, 2, 3,","max_tokens":8,"temperature":1.2,"top_p":0.9,"seed":42,"ignore_eos":true}'
)

# ask NAME: the four requests at once against the running server; each answer's text in NAME.N.
ask() {
  local pids=()
  for i in "${!bodies[@]}"; do
    completion "$server_port" "${bodies[$i]}" "$work/$1.$i" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  for i in "${!bodies[@]}"; do
    [ "$(cat "$work/$1.$i.status")" = 200 ] || fail "$1: request $i got $(cat "$work/$1.$i.status"): $(cat "$work/$1.$i")"
    # The answer without what differs between runs (the id, the time).
    grep -o '"choices":.*"usage"' "$work/$1.$i" >"$work/$1.$i.choices" || fail "$1: request $i: no choices"
  done
}

start_server alone -- --parallel 2 --threads 1 || fail "the server alone did not start"
ask alone
kill -TERM "$server_pid"
wait "$server_pid" || fail "the server alone exited $? after SIGTERM"

start_server ranks $mpirun_np3 -- --parallel 2 --threads 1 || fail "the server on 3 ranks did not start"
launcher=$server_pid
ask ranks
for i in "${!bodies[@]}"; do
  cmp -s "$work/alone.$i.choices" "$work/ranks.$i.choices" ||
    fail "request $i: alone $(cat "$work/alone.$i.choices"); on 3 ranks $(cat "$work/ranks.$i.choices")"
done
rank0=$(rank_pid "$launcher" 0) || fail "rank 0's process not found"
kill -TERM "$rank0"
wait_gone "$launcher" 60 || fail "the ranks still run 60 s after SIGTERM to rank 0"
wait "$launcher"
status=$?
[ "$status" -eq 0 ] || fail "mpirun exited $status after SIGTERM to rank 0"
echo "serve on 3 ranks: the same ${#bodies[@]} answers as alone; stopped with status 0"
