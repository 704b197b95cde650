#!/bin/sh
# make_seeds.sh SOURCE_DIR HARNESS OUT_DIR: the seed corpus of one harness, from the repository's
# own inputs: the fixtures' and demo models' config.json, generation_config.json, safetensors
# headers, tokenizer.json and chat templates, configs/*.yaml, the reference tokenizers' chat
# templates (tests/data/tokenizers.tar.xz), and the hand-written seeds in tests/fuzz/seeds/HARNESS.
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
    tokenizer_json)
      [ -f "${dir}tokenizer.json" ] && cp "${dir}tokenizer.json" "$out/$n-tokenizer.json" ;;
    chat_template)
      for f in chat_template.jinja tokenizer_config.json; do
        [ -f "$dir$f" ] && cp "$dir$f" "$out/$n-$f"
      done ;;
  esac
done
# The real models' templates (gpt-oss's chat_template.jinja, both tokenizer_config.json files),
# unpacked here from the archive the tests use; their tokenizer.json files (megabytes) are cut to
# seeds of a few hundred tokens by scripts/make-tokenizer-fuzz-seeds.py instead.
if [ "$harness" = chat_template ]; then
  refs=$(mktemp -d)
  tar -xJf "$src/tests/data/tokenizers.tar.xz" -C "$refs" --wildcards '*/chat_template.jinja' '*/tokenizer_config.json'
  for f in "$refs"/tokenizers/*/*; do
    cp "$f" "$out/ref-$(basename "$(dirname "$f")")-$(basename "$f")"
  done
  rm -rf "$refs"
fi
if [ "$harness" = engine_config ]; then cp "$src"/configs/*.yaml "$out"/; fi
