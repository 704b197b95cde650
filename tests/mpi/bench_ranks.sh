#!/bin/sh
# usage: bench_ranks.sh STORMO MODEL WORKDIR
# `bench --json` under mpirun -np 3 reports what rank 0 exchanged with the other ranks during the
# decode (bytes each way per token, messages, layer exchanges, time waited); alone it reports none.
set -u
stormo=$1
model=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "bench_ranks.sh: $*"
  echo "--- stderr:"
  cat "$work/err.txt"
  exit 1
}
bench="bench --model $model --prompt-tokens 4 --gen-tokens 6 --threads 1 --disk-probe 0 --ram-probe 16MiB --ram-repeats 1 --paired-probe 0 --ram-probe-after 0 --json"
${MPIRUN:-mpirun} --allow-run-as-root --oversubscribe -np 3 "$stormo" $bench >"$work/ranks.json" 2>"$work/err.txt" ||
  fail "bench under mpirun -np 3 failed"
"$stormo" $bench >"$work/alone.json" 2>"$work/err.txt" || fail "bench alone failed"
# One line without blanks, so each figure is found with grep.
tr -d ' \n' <"$work/ranks.json" >"$work/ranks.flat"
tr -d ' \n' <"$work/alone.json" >"$work/alone.flat"
ranks=$(grep -o '"ranks":{[^}]*}' "$work/ranks.flat") || fail "no ranks figures under mpirun: $(cat "$work/ranks.json")"
echo "$ranks" | grep -q '"ranks":3,' || fail "ranks figures do not say 3 ranks: $ranks"
for field in bytes_sent_per_token bytes_received_per_token messages_per_token layer_exchanges_per_token; do
  echo "$ranks" | grep -q "\"$field\":[1-9]" || echo "$ranks" | grep -q "\"$field\":0\.[0-9]*[1-9]" ||
    fail "$field is not positive: $ranks"
done
! grep -q '"ranks":{' "$work/alone.flat" || fail "bench alone reports ranks figures"
# The decode's ids are the same bits as alone (docs/distributed.md).
alone_tokens=$(grep -o '"tokens":\[[^]]*\]' "$work/alone.flat")
ranks_tokens=$(grep -o '"tokens":\[[^]]*\]' "$work/ranks.flat")
[ -n "$alone_tokens" ] && [ "$alone_tokens" = "$ranks_tokens" ] || fail "tokens differ: alone $alone_tokens, ranks $ranks_tokens"
echo "$ranks"
