#!/bin/sh
# usage: weighted_split.sh STORMO MODEL WORKDIR
# --rank-split weighted with a different --expert-budget per rank (mpirun's MPMD form: rank 0 with
# one budget, ranks 1 and 2 with another). Twice: ranks 1 and 2 with room for every expert and
# rank 0 with little (the memory split: rank 0 holds fewer experts), then every rank with little
# (every share streams, weighted by the disks measured; rank 0 hints the owners the next layer's
# likely experts). Each time `logits` and greedy `generate` must give the bytes of one process,
# rank 0 must print one line per rank whose experts per layer sum to the layer's, and in the
# streaming run the owners must have received hints and read experts ahead on them.
set -eu
stormo=$1
model=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
mpirun="${MPIRUN:-mpirun} --allow-run-as-root --oversubscribe"
ids=1,2,3,4,5,6,7,8,9,10,11,12
n_experts=$(sed -n 's/.*"num_local_experts": *\([0-9]*\).*/\1/p' "$model/config.json")
fail() {
  echo "weighted_split.sh: $*"
  for f in "$work"/*.err; do echo "--- $f"; cat "$f"; done
  exit 1
}
"$stormo" logits --model "$model" --ids $ids --out "$work/alone.npy" --threads 1
"$stormo" generate --model "$model" --ids $ids --max-tokens 8 --ignore-eos --threads 1 >"$work/alone.ids"

# The experts per layer rank R holds, from rank 0's line for it.
held() { sed -n "s/^stormo: rank $2 (.*): .* holds \([0-9]*\) of $n_experts experts per layer$/\1/p" "$1"; }

# usage: run NAME BUDGET_RANK0 BUDGET_OTHERS [options for every rank...]
run() {
  name=$1 b0=$2 b1=$3
  shift 3
  $mpirun -np 1 "$stormo" logits --model "$model" --ids $ids --out "$work/$name.npy" --threads 1 --rank-split weighted --expert-budget "$b0" "$@" : \
    -np 2 "$stormo" logits --model "$model" --ids $ids --out "$work/$name.npy" --threads 1 --rank-split weighted --expert-budget "$b1" "$@" \
    2>"$work/$name-logits.err" || fail "$name: logits failed"
  cmp "$work/alone.npy" "$work/$name.npy" || fail "$name: the logits differ from one process's"
  $mpirun -np 1 "$stormo" generate --model "$model" --ids $ids --max-tokens 8 --ignore-eos --threads 1 --rank-split weighted \
    --expert-budget "$b0" --stats "$work/$name.json" --verbose "$@" : \
    -np 2 "$stormo" generate --model "$model" --ids $ids --max-tokens 8 --ignore-eos --threads 1 --rank-split weighted \
    --expert-budget "$b1" --verbose "$@" >"$work/$name.ids" 2>"$work/$name.err" || fail "$name: generate failed"
  cmp "$work/alone.ids" "$work/$name.ids" || fail "$name: the token ids differ from one process's"
  total=0
  for r in 0 1 2; do
    n=$(held "$work/$name.err" $r)
    [ -n "$n" ] || fail "$name: no line for rank $r"
    total=$((total + n))
  done
  [ "$total" -eq "$n_experts" ] || fail "$name: the shares sum to $total, not $n_experts"
}

# Ranks 1 and 2 hold every expert in RAM; rank 0's budget holds about one expert per layer (99 KB each, 4 layers).
run memory 400KiB 64MiB
grep -q "^stormo: rank 1 (.*): .* for experts, in RAM, holds" "$work/memory.err" || fail "memory: rank 1 is not in RAM"
[ "$(held "$work/memory.err" 0)" -lt "$(held "$work/memory.err" 1)" ] || fail "memory: rank 0 holds no fewer experts than rank 1"

# Every rank streams: each measured its disk, and rank 0 hinted the streaming owners.
# Whether an owner reads ahead on a hint depends on timing (a hint that arrives after the expert's
# demand, or names experts its two or three slots already hold, reads nothing ahead). This test
# failed twice in about ten full `ctest -j2` runs beside other tests and never in 20 runs alone or
# beside a CPU hog; neither failure's output was kept, and this observation is the only check in
# it that depends on timing. So the streaming run gets a second try for that observation only,
# with the first try's lines printed; the bits, the shares, the disk lines and rank 0's hints fail
# at once.
read_ahead() {
  grep -Eq "^stormo: rank [12] computed [1-9][0-9]* layer steps for rank 0; [1-9][0-9]* prefetch hints named [1-9][0-9]* experts, [1-9][0-9]* read ahead" \
    "$work/streaming.err"
}
for try in 1 2; do
  run streaming 250KiB 300KiB
  for r in 0 1 2; do
    grep -q "^stormo: rank $r (.*): .* for experts, disk [0-9.]* GB/s, holds" "$work/streaming.err" || fail "streaming: rank $r measured no disk"
  done
  grep -Eq '"prefetch_hints": ?[1-9]' "$work/streaming.json" || fail "streaming: rank 0 sent no prefetch hint"
  read_ahead && break
  [ "$try" -eq 2 ] && fail "streaming: no owner read ahead on a hint (twice)"
  echo "streaming: no hint read ahead on the first try; its lines:"
  grep -E "prefetch|layer steps" "$work/streaming.err" "$work/streaming.json" || true
done
lines() { grep ' experts per layer$' "$1" | sed 's/^stormo: //' | tr '\n' ';'; }
echo "memory: $(lines "$work/memory.err")"
echo "streaming: $(lines "$work/streaming.err") $(grep -Eo '"prefetch_hints": ?[0-9]*' "$work/streaming.json")"
