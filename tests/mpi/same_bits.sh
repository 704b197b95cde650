#!/bin/sh
# usage: same_bits.sh STORMO MODEL WORKDIR [engine options...]
# Runs `logits` and greedy `generate` on MODEL alone, then under `mpirun -np 3` (each rank holding
# a third of every MoE layer's experts), and fails unless the logits files and the token ids are
# the same bytes and rank 0's --stats show rows sent to the other ranks and outputs received. Oversubscribed (3 ranks on any number of cores) and allowed as root, as CI runs.
set -eu
stormo=$1
model=$2
work=$3
shift 3
rm -rf "$work"
mkdir -p "$work"
mpirun="${MPIRUN:-mpirun} --allow-run-as-root --oversubscribe -np 3"
ids=1,2,3,4,5,6,7,8,9,10,11,12
"$stormo" logits --model "$model" --ids $ids --out "$work/alone.npy" --threads 1 "$@"
$mpirun "$stormo" logits --model "$model" --ids $ids --out "$work/ranks.npy" --threads 1 "$@"
cmp "$work/alone.npy" "$work/ranks.npy"
"$stormo" generate --model "$model" --ids $ids --max-tokens 8 --ignore-eos --threads 1 "$@" >"$work/alone.ids"
$mpirun "$stormo" generate --model "$model" --ids $ids --max-tokens 8 --ignore-eos --threads 1 --stats "$work/stats.json" "$@" \
  >"$work/ranks.ids"
cmp "$work/alone.ids" "$work/ranks.ids"
test -s "$work/ranks.ids"
# Rank 0 really sent rows to the other ranks (and says so in --stats).
grep -Eq '"bytes_sent": ?[1-9]' "$work/stats.json"
grep -Eq '"bytes_received": ?[1-9]' "$work/stats.json"
echo "same bits: $(tr '\n' ' ' <"$work/ranks.ids")"
