#!/bin/sh
# usage: run_pipe.sh STORMO MODEL WORKDIR
# (MODEL must answer the chat template with more than its end token: the glm demo does)
# `run` (greedy, and sampled with a seed), `chat` (two turns), `pipe` (a greedy turn, then a sampled one continuing it)
# and `generate --speculate context` alone, then under `mpirun -np 3`: the same stdout bytes. The
# speculative run must have verified drafts (so the verify blocks went through the other ranks'
# experts) and give the ids of the plain run alone.
set -eu
stormo=$1
model=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
mpirun="${MPIRUN:-mpirun} --allow-run-as-root --oversubscribe -np 3"

for sampling in "--temperature 0" "--temperature 0.8 --seed 7"; do
  "$stormo" run "$model" "Tell me about the sea" -n 12 --threads 1 $sampling >"$work/run.alone" 2>"$work/run.alone.err"
  $mpirun "$stormo" run "$model" "Tell me about the sea" -n 12 --threads 1 $sampling >"$work/run.ranks" 2>"$work/run.ranks.err"
  cmp "$work/run.alone" "$work/run.ranks"
  test -s "$work/run.ranks"
  echo "run ($sampling): the same $(wc -c <"$work/run.ranks") bytes"
done

# Two turns of chat from stdin: the second reuses the first's KV.
printf 'Hello\nTell me more\n' | "$stormo" chat "$model" -n 8 --threads 1 >"$work/chat.alone" 2>"$work/chat.alone.err"
printf 'Hello\nTell me more\n' | $mpirun "$stormo" chat "$model" -n 8 --threads 1 >"$work/chat.ranks" 2>"$work/chat.ranks.err"
cmp "$work/chat.alone" "$work/chat.ranks"
test "$(wc -l <"$work/chat.ranks")" -eq 2
echo "chat: the same two answers"

# TURN <max_new> <keep> <temp> <top_p> <top_k> <n> <ids...>; the second keeps the first's positions.
printf 'TURN 8 0 0 1 0 4 9 9 9 9\nTURN 8 11 0.8 0.9 0 1 5\nSHUTDOWN\n' >"$work/pipe.in"
"$stormo" pipe "$model" --threads 1 --seed 3 <"$work/pipe.in" >"$work/pipe.alone"
$mpirun "$stormo" pipe "$model" --threads 1 --seed 3 <"$work/pipe.in" >"$work/pipe.ranks"
cmp "$work/pipe.alone" "$work/pipe.ranks"
test "$(grep -c '^DONE' "$work/pipe.ranks")" -eq 2
echo "pipe: the same $(grep -c '^TOKEN' "$work/pipe.ranks") tokens"

# A repetitive prompt gives the context drafter something to propose.
ids=5,6,7,8,5,6,7,8,5,6,7,8,5,6,7,8
"$stormo" generate --model "$model" --ids $ids --max-tokens 24 --ignore-eos --threads 1 --speculate off >"$work/plain.alone"
$mpirun "$stormo" generate --model "$model" --ids $ids --max-tokens 24 --ignore-eos --threads 1 --speculate context \
  --stats "$work/spec.json" >"$work/spec.ranks"
cmp "$work/plain.alone" "$work/spec.ranks"
grep -Eq '"verify_steps": ?[1-9]' "$work/spec.json"
echo "speculate context: the same ids as plain alone, $(grep -Eo '"accepted": ?[0-9]+' "$work/spec.json" | head -1)"
