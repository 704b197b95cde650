#!/bin/bash
# usage: serve_fault.sh STORMO MODEL WORKDIR
# `stormo serve --parallel 2 --rank-timeout 3` under `mpirun -np 3`; two long completions run
# batched and a third waits in the queue when rank 2 is stopped (SIGSTOP, a hung rank). All three
# get HTTP 503 with the code rank_lost and a message naming rank 2 and its host, and the run ends
# non-zero within the bound, so a supervisor starts it again.
set -u
stormo=$1
model=$2
work=$3
bound=30  # --rank-timeout 3 plus the launcher's time to end the job, with a margin for CI
rm -rf "$work"
mkdir -p "$work"
. "$(dirname "$0")/serve_support.sh"

fail() {
  echo "serve_fault.sh: $*"
  echo "--- stderr:"
  cat "$work/ranks.err"
  [ -n "${server_pid:-}" ] && kill -KILL "$server_pid" 2>/dev/null
  [ -n "${victim:-}" ] && kill -KILL "$victim" 2>/dev/null
  exit 1
}

start_server ranks $mpirun_np3 -- --parallel 2 --threads 1 --rank-timeout 3 || fail "the server on 3 ranks did not start"
launcher=$server_pid
victim=$(rank_pid "$launcher" 2) || fail "rank 2's process not found among the launcher's children"
long='{"prompt":"The sea is","max_tokens":100000,"temperature":0,"ignore_eos":true}'
completion "$server_port" "$long" "$work/a" &
a=$!
completion "$server_port" "$long" "$work/b" &
b=$!
# Both are generating once /metrics shows two running and decode rows computed.
for _ in $(seq 1 300); do
  metrics=$(curl -s "http://127.0.0.1:$server_port/metrics")
  if echo "$metrics" | grep -Eq '^stormo_requests_running 2' &&
    echo "$metrics" | grep -Eq '^stormo_batch_rows_total\{kind="decode"\} [1-9][0-9]'; then
    break
  fi
  sleep 0.1
done
# A third waits in the queue behind them (two slots).
completion "$server_port" "$long" "$work/c" &
c=$!
for _ in $(seq 1 100); do
  curl -s "http://127.0.0.1:$server_port/metrics" | grep -Eq '^stormo_queue_depth 1' && break
  sleep 0.1
done
kill -STOP "$victim"
stopped=$(date +%s)
wait_gone "$launcher" "$bound" || fail "still running $bound s after SIGSTOP to rank 2"
wait "$launcher"
status=$?
took=$(($(date +%s) - stopped))
wait "$a" "$b" "$c"
[ "$status" -ne 0 ] || fail "exit status 0 after a rank was lost"
for r in a b c; do
  [ "$(cat "$work/$r.status")" = 503 ] || fail "request $r got $(cat "$work/$r.status"): $(cat "$work/$r")"
  grep -Eq '"code": ?"rank_lost"' "$work/$r" || fail "request $r: no code rank_lost: $(cat "$work/$r")"
  grep -q 'rank 2 (.*) did not answer' "$work/$r" || fail "request $r does not name rank 2 and its host: $(cat "$work/$r")"
done
kill -KILL "$victim" 2>/dev/null
echo "SIGSTOP to rank 2: the two running requests and the queued one 503, exit status $status after $took s; $(cat "$work/a")"
