#!/usr/bin/env bash
# A large model's GGUF made piece by piece, for races on a disk that cannot hold its BF16 checkpoint
# and the converter's output at once (the Qwen3-30B-A3B shape: 61 GB in BF16, 32 GB in Q8_0).
#
#   scripts/make-stacked-gguf.sh STORMO LLAMA_SRC LLAMA_BIN PRESET PIECES LAYERS QUANT OUT_PREFIX
#
# For each of PIECES pieces: `stormo synth --preset PRESET --layers LAYERS --seed k` writes a
# checkpoint of LAYERS layers, llama.cpp's converter turns it into a Q8_0 GGUF (run by $CONVERT,
# a command taking MODEL_DIR OUT.gguf and converter options, e.g. a wrapper around
# LLAMA_SRC/convert_hf_to_gguf.py), `LLAMA_BIN/llama-quantize --allow-requantize` makes it QUANT
# (e.g. Q4_K_M), and the checkpoint and the Q8_0 file are deleted. Then gguf-stack-layers.py
# stacks the pieces into OUT_PREFIX-0000k-of-0000N.gguf, layers renumbered in order. Peak disk: the
# quantized pieces so far, plus one checkpoint and its Q8_0 file.
#
# Each piece gets its own seed, so its layers differ from the others'; llama-quantize chooses the
# mix of a piece's types (Q4_K_M keeps some layers' ffn_down and attn_v in Q6_K) by the piece's
# own layer count, so the stacked file's mix repeats per piece where a 48-layer quantization
# would spread it over the whole depth. The tensors' shapes, types and sizes are the real model's.
set -euo pipefail

if [ $# -lt 8 ]; then
    sed -n '2,19p' "$0" >&2
    exit 2
fi
STORMO=$1 LLAMA_SRC=$2 LLAMA_BIN=$3 PRESET=$4 PIECES=$5 LAYERS=$6 QUANT=$7 PREFIX=$8
: "${CONVERT:?set CONVERT to the converter command (MODEL_DIR OUT.gguf [options])}"
WORK=$(dirname "$PREFIX")/stack-work
mkdir -p "$WORK"
here=$(cd "$(dirname "$0")" && pwd)

pieces=()
for k in $(seq 1 "$PIECES"); do
    piece=$WORK/piece-$k.$QUANT.gguf
    if [ ! -f "$piece" ]; then
        echo "piece $k of $PIECES: synth" >&2
        rm -rf "$WORK/ckpt" "$WORK/q8.gguf"
        "$STORMO" synth --preset "$PRESET" --layers "$LAYERS" --seed "$k" --out "$WORK/ckpt" >&2
        echo "piece $k of $PIECES: convert to Q8_0" >&2
        $CONVERT "$WORK/ckpt" "$WORK/q8.gguf" --outtype q8_0 > "$WORK/convert-$k.log" 2>&1
        rm -rf "$WORK/ckpt"
        echo "piece $k of $PIECES: llama-quantize $QUANT" >&2
        LD_LIBRARY_PATH=$LLAMA_BIN "$LLAMA_BIN/llama-quantize" --allow-requantize "$WORK/q8.gguf" "$piece.tmp" "$QUANT" \
            > "$WORK/quantize-$k.log" 2>&1
        mv "$piece.tmp" "$piece"
        rm -f "$WORK/q8.gguf"
    fi
    pieces+=("$piece")
done
echo "stacking ${#pieces[@]} pieces" >&2
"${PYTHON:-python3}" "$here/gguf-stack-layers.py" "$LLAMA_SRC/gguf-py" "$PREFIX" "${pieces[@]}" --delete-pieces
rmdir "$WORK" 2>/dev/null || true
