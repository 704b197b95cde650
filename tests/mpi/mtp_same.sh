#!/bin/sh
# usage: mtp_same.sh STORMO MODEL WORKDIR
# (MODEL must carry a multi-token-prediction layer: the GLM and DeepSeek-V3 demos do)
# Greedy and seeded `generate` alone without speculation, then under `mpirun -np 3` drafting from
# the MTP layer (rank 0 holds that layer's experts; the main layers' are split): the same ids, with
# MTP drafts verified and some kept. Ranks 1 and 2 say they left the dense part unread.
set -eu
stormo=$1
model=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
mpirun="${MPIRUN:-mpirun} --allow-run-as-root --oversubscribe -np 3"
ids=1,2,3,4,5,6,7,8,9,10,11,12

for sampling in "--temperature 0" "--temperature 0.7 --seed 11"; do
  "$stormo" generate --model "$model" --ids $ids --max-tokens 16 --ignore-eos --threads 1 --speculate off $sampling \
    >"$work/plain.alone"
  $mpirun "$stormo" generate --model "$model" --ids $ids --max-tokens 16 --ignore-eos --threads 1 --speculate mtp \
    $sampling --stats "$work/mtp.json" --verbose >"$work/mtp.ranks" 2>"$work/mtp.err"
  cmp "$work/plain.alone" "$work/mtp.ranks"
  tr -d ' \n' <"$work/mtp.json" >"$work/mtp.flat"
  grep -Eq '"verify_steps":[1-9]' "$work/mtp.flat"
  grep -Eq '"mtp":\{"drafted":[1-9][0-9]*,"accepted":[1-9]' "$work/mtp.flat"
  grep -Eq '"bytes_sent":[1-9]' "$work/mtp.flat"
  for rank in 1 2; do
    grep -Eq "rank $rank computed [1-9][0-9]* layer steps.*dense part not read \([1-9]" "$work/mtp.err"
  done
  echo "speculate mtp on 3 ranks ($sampling): the same ids as plain alone," \
    "$(grep -Eo '"mtp":\{"drafted":[0-9]+,"accepted":[0-9]+' "$work/mtp.flat")"
done
