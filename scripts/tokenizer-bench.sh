#!/bin/sh
# Encode speed of `stormo tokenize` against the npm package @lenml/tokenizers (transformers.js's
# tokenizers) on the same text and tokenizer.json, and a check that both give the same ids.
#
#   scripts/tokenizer-bench.sh BUILD_DIR [TOKENIZER_NAME...]     (default: gpt-oss qwen3)
#
# The text (a few MB, written to a temporary directory, never to the repository) is built from
# what a Debian machine has: prose from /usr/share/doc (changelogs, copyright files), C++ code from
# this repository's C++ sources, and Chinese prose from the Rust toolchain's Chinese
# "Rust by Example" pages when rustup installed them (else the tokenizer references' texts,
# repeated). The npm package is installed into $TOKBENCH_NPM (default /tmp/tokbench) if missing.
set -eu
build=${1:?usage: tokenizer-bench.sh BUILD_DIR [TOKENIZER_NAME...]}
shift
[ $# -gt 0 ] || set -- gpt-oss qwen3
repo=$(cd "$(dirname "$0")/.." && pwd)
data=$build/test-data/tokenizers
npm_dir=${TOKBENCH_NPM:-/tmp/tokbench}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
text=$work/bench.txt

# About 1.5 MB of English prose and 1.5 MB of code.
find /usr/share/doc -name 'changelog*.gz' -o -name copyright | sort | while read -r f; do
  case $f in *.gz) gzip -dc "$f" ;; *) cat "$f" ;; esac
done | head -c 1500000 > "$work/prose.txt"
find "$repo/host" "$repo/plugins" "$repo/tests" -name '*.cpp' -o -name '*.hpp' | sort | xargs cat 2> /dev/null | head -c 1500000 > "$work/code.txt"
# About 1 MB of Chinese (with its HTML markup and code samples).
zh=""
if command -v rustc > /dev/null 2>&1; then zh=$(rustc --print sysroot)/share/doc/rust/html/rust-by-example/zh; fi
if [ -n "$zh" ] && [ -d "$zh" ]; then
  find "$zh" -name '*.html' | sort | xargs cat 2> /dev/null | head -c 1000000 > "$work/cjk.txt"
else
  python3 -c 'import json,sys; print("\n".join(c["text"] for c in json.load(open(sys.argv[1]))) * 40)' \
    "$data/qwen3/reference/encode.json" | head -c 1000000 > "$work/cjk.txt"
fi
cat "$work/prose.txt" "$work/code.txt" "$work/cjk.txt" > "$text"

[ -d "$npm_dir/node_modules/@lenml/tokenizers" ] || npm install --silent --prefix "$npm_dir" @lenml/tokenizers > /dev/null
cat > "$work/bench.cjs" <<'JS'
const fs = require("fs");
const { TokenizerLoader } = require(process.argv[2] + "/node_modules/@lenml/tokenizers");
const [dir, textFile, outFile] = process.argv.slice(3);
const t0 = process.hrtime.bigint();
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(dir + "/tokenizer.json", "utf8")),
  tokenizerConfig: JSON.parse(fs.readFileSync(dir + "/tokenizer_config.json", "utf8")),
});
const text = fs.readFileSync(textFile, "utf8");
const t1 = process.hrtime.bigint();
const ids = tokenizer.encode(text, { add_special_tokens: false });
const t2 = process.hrtime.bigint();
fs.writeFileSync(outFile, ids.join(" ") + "\n");
const s = (a, b) => Number(b - a) / 1e9;
const bytes = Buffer.byteLength(text, "utf8");
console.error(`@lenml/tokenizers: load ${s(t0, t1).toFixed(3)} s; encoded ${bytes} bytes in ${s(t1, t2).toFixed(3)} s, ${(bytes / 1e6 / s(t1, t2)).toFixed(2)} MB/s`);
JS

echo "text: $(wc -c < "$text") bytes (prose $(wc -c < "$work/prose.txt"), code $(wc -c < "$work/code.txt"), CJK $(wc -c < "$work/cjk.txt"))"
for name in "$@"; do
  echo "== $name"
  "$build/bin/stormo" tokenize --tokenizer "$data/$name" --text-file "$text" --time > "$work/stormo.ids"
  node "$work/bench.cjs" "$npm_dir" "$data/$name" "$text" "$work/npm.ids"
  if cmp -s "$work/stormo.ids" "$work/npm.ids"; then echo "same ids ($(wc -w < "$work/stormo.ids") tokens)"; else echo "ids DIFFER"; fi
done
