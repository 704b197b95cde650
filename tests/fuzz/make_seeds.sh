#!/bin/sh
# make_seeds.sh SOURCE_DIR HARNESS OUT_DIR: the seed corpus of one harness, from the repository's
# own inputs: the fixtures' and demo models' config.json, generation_config.json and safetensors
# headers, configs/*.yaml, and the hand-written seeds in tests/fuzz/seeds/HARNESS.
set -eu
src=$1 harness=$2 out=$3

# 8 little-endian bytes of $1.
le64() {
  v=$1 i=0
  while [ $i -lt 8 ]; do
    printf "\\$(printf '%03o' $((v % 256)))"
    v=$((v / 256)) i=$((i + 1))
  done
}

mkdir -p "$out"
n=0
if [ -d "$src/tests/fuzz/seeds/$harness" ]; then cp "$src/tests/fuzz/seeds/$harness"/* "$out"/; fi
for dir in "$src"/tests/data/fixtures/*/ "$src"/models/*/; do
  n=$((n + 1))
  case $harness in
    model_config)
      for f in config.json generation_config.json; do
        [ -f "$dir$f" ] && cp "$dir$f" "$out/$n-$f"
      done ;;
    safetensors_header)
      f="${dir}model.safetensors"
      [ -f "$f" ] || continue
      # The size of the data after the header (the harness adds 8 + the header's length), then
      # the header JSON the file holds.
      len=$(od -An -t u8 -N 8 "$f" | tr -d ' ')
      size=$(wc -c < "$f")
      { le64 $((size - 8 - len)); tail -c +9 "$f" | head -c "$len"; } > "$out/$n-header" ;;
  esac
done
if [ "$harness" = engine_config ]; then cp "$src"/configs/*.yaml "$out"/; fi
