#!/usr/bin/env bash
# Fuzzes stormo's parsers of untrusted input for longer than CI does (docs/fuzzing.md).
#   scripts/fuzz.sh [SECONDS] [HARNESS...]
# SECONDS per harness (default 300); harnesses: safetensors_header safetensors_index model_config
# engine_config token_ids route_trace gguf_header tokenizer_json chat_template (default: all). Builds them with clang into build-fuzz/
# (next to build/), grows build-fuzz/runs/corpus/HARNESS across runs, and keeps any crashing input
# in build-fuzz/runs/crashes/HARNESS; it stops at the first harness that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(safetensors_header safetensors_index model_config engine_config token_ids route_trace gguf_header
  tokenizer_json chat_template)
clangxx=$(command -v clang++ || command -v clang++-14 || true)
[ -n "$clangxx" ] || { echo "fuzz.sh: clang++ is needed (apt-get install clang)" >&2; exit 1; }
cmake -S tests/fuzz -B build-fuzz -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-fuzz -j2
for h in "${harnesses[@]}"; do
  echo "fuzz.sh: $h for ${seconds}s"
  sh tests/fuzz/run.sh "build-fuzz/fuzz_$h" "$h" "$seconds" "$PWD" "$PWD/build-fuzz/runs"
done
