#!/bin/sh
# run.sh BINARY HARNESS SECONDS SOURCE_DIR WORK_DIR: runs one libFuzzer harness for SECONDS over
# its seeds (make_seeds.sh) and the corpus it grew before (WORK_DIR/corpus/HARNESS). A crash, a
# sanitizer report, a timeout or an out-of-memory input fails the run and is kept in
# WORK_DIR/crashes/HARNESS (reproduce: BINARY FILE).
set -eu
bin=$1 harness=$2 seconds=$3 src=$4 work=$5
seeds=$work/seeds/$harness corpus=$work/corpus/$harness crashes=$work/crashes/$harness
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$crashes"
sh "$src/tests/fuzz/make_seeds.sh" "$src" "$harness" "$seeds"
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$crashes/" -print_final_stats=1 "$corpus" "$seeds"
