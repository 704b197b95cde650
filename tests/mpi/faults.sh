#!/bin/bash
# usage: faults.sh STORMO MODEL WORKDIR SIGNAL
# Starts a long greedy generation under `mpirun -np 3` with --rank-timeout 3, sends SIGNAL (STOP:
# a hung rank; KILL: a dead one) to rank 2 once the first token is out, and checks that the run
# ends non-zero within the bound with a message naming rank 2.
set -u
stormo=$1
model=$2
work=$3
signal=$4
bound=30  # --rank-timeout 3 plus the launcher's own time to end the job, with a margin for CI
rm -rf "$work"
mkdir -p "$work"
${MPIRUN:-mpirun} --allow-run-as-root --oversubscribe -np 3 "$stormo" generate --model "$model" --ids 1,2,3 \
  --max-tokens 100000 --ignore-eos --threads 1 --rank-timeout 3 >"$work/out.ids" 2>"$work/err.txt" &
launcher=$!
fail() {
  echo "faults.sh: $*"
  echo "--- stderr:"
  cat "$work/err.txt"
  kill -KILL "$launcher" 2>/dev/null
  exit 1
}
for _ in $(seq 1 600); do
  [ -s "$work/out.ids" ] && break
  kill -0 "$launcher" 2>/dev/null || fail "the run ended before its first token"
  sleep 0.1
done
[ -s "$work/out.ids" ] || fail "no token within 60 s"
victim=""
for pid in $(pgrep -P "$launcher"); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=2'; then victim=$pid; fi
done
[ -n "$victim" ] || fail "rank 2's process not found among the launcher's children"
kill -"$signal" "$victim"
signalled=$(date +%s)
status=0
for _ in $(seq 1 $((bound * 10))); do
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$launcher" 2>/dev/null && fail "still running $bound s after SIG$signal to rank 2"
wait "$launcher"
status=$?
took=$(($(date +%s) - signalled))
[ "$status" -ne 0 ] || fail "exit status 0 after SIG$signal to rank 2"
grep -q "rank 2" "$work/err.txt" || fail "no message naming rank 2"
if [ "$signal" = STOP ]; then
  grep -q "rank 2 (.*) did not answer" "$work/err.txt" || fail "no message naming rank 2 and its host"
fi
echo "SIG$signal to rank 2: exit status $status after $took s; $(grep -m1 'rank 2' "$work/err.txt")"
