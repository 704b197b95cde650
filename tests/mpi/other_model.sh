#!/bin/sh
# usage: other_model.sh STORMO MODEL OTHER_MODEL WORKDIR
# Ranks 0 and 1 start with MODEL, rank 2 with OTHER_MODEL: the run must be refused at start,
# non-zero, with a message naming rank 2 and printing both identities.
set -u
stormo=$1
model=$2
other=$3
work=$4
rm -rf "$work"
mkdir -p "$work"
${MPIRUN:-mpirun} --allow-run-as-root --oversubscribe \
  -np 2 "$stormo" logits --model "$model" --ids 1,2,3 --out "$work/logits.npy" --threads 1 : \
  -np 1 "$stormo" logits --model "$other" --ids 1,2,3 --out "$work/logits.npy" --threads 1 \
  >"$work/out.txt" 2>"$work/err.txt"
status=$?
fail() {
  echo "other_model.sh: $*"
  echo "--- stderr:"
  cat "$work/err.txt"
  exit 1
}
[ "$status" -ne 0 ] || fail "exit status 0 with rank 2 on another model"
grep -q "refused: rank 2 (.*) was started with another model (checkpoint .*) than rank 0 (checkpoint .*)" "$work/err.txt" ||
  fail "no refusal naming rank 2 with both identities"
[ ! -e "$work/logits.npy" ] || fail "logits were written by a refused run"
echo "$(grep -m1 'refused: rank' "$work/err.txt")"
