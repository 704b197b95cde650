#!/usr/bin/env python3
"""Stack GGUF files that hold consecutive layers of one model into llama.cpp's split form.

usage: gguf-stack-layers.py GGUF_PY_DIR OUT_PREFIX PIECE.gguf [PIECE.gguf ...] [--delete-pieces]

Why: a model too large for the disk in one piece (the Qwen3-30B-A3B shape's checkpoint is 61 GB in
BF16, and the converter writes about as much again) can be made as pieces of a few layers each --
`stormo synth --layers N`, llama.cpp's converter, `llama-quantize` -- and stacked here. Every piece
numbers its layers from 0; shard k of the output holds piece k's `blk.*` tensors renumbered after
the layers of the pieces before it. Shard 1 also holds piece 1's other tensors (embedding, final
norm, head) and its metadata, with `<arch>.block_count` set to the total; the other shards carry
only the split keys, as llama.cpp's `gguf-split` writes them. The output is
OUT_PREFIX-0000k-of-0000N.gguf, which llama.cpp and `stormo` both open from its first file.

GGUF_PY_DIR is llama.cpp's `gguf-py` folder (the GGUF reader and writer used here). The tensors'
bytes are copied unchanged. --delete-pieces removes each piece once its shard is written, so the
disk holds one piece more than the output at most.
"""
import re
import sys
from pathlib import Path

LAYER = re.compile(r"^blk\.(\d+)\.(.*)$")


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--delete-pieces"]
    delete = len(args) != len(sys.argv) - 1
    if len(args) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    sys.path.insert(0, args[0])
    import gguf  # noqa: E402

    prefix = args[1]
    pieces = [Path(p) for p in args[2:]]
    readers = [gguf.GGUFReader(p) for p in pieces]
    arch = readers[0].fields[gguf.Keys.General.ARCHITECTURE].contents()
    block_key = gguf.Keys.LLM.BLOCK_COUNT.format(arch=arch)

    layers = []
    for path, reader in zip(pieces, readers):
        field = reader.fields.get(gguf.Keys.General.ARCHITECTURE)
        if field is None or field.contents() != arch:
            raise SystemExit(f"{path}: general.architecture is not {arch!r} as in {pieces[0]}")
        if block_key not in reader.fields:
            raise SystemExit(f"{path}: no {block_key}")
        layers.append(int(reader.fields[block_key].contents()))

    def kept(k: int, reader) -> list:
        # Piece 1 keeps everything; the others only their layers.
        return [t for t in reader.tensors if k == 0 or LAYER.match(t.name)]

    total_layers = sum(layers)
    total_tensors = sum(len(kept(k, r)) for k, r in enumerate(readers))
    n = len(pieces)
    first_layer = 0
    for k, path in enumerate(pieces):
        reader = readers[k]
        out = Path(f"{prefix}-{k + 1:05d}-of-{n:05d}.gguf")
        writer = gguf.GGUFWriter(out, arch)
        if k == 0:
            for field in reader.fields.values():
                if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
                    continue
                if field.name.startswith("split."):
                    raise SystemExit(f"{path}: already a split part ({field.name})")
                value_type = field.types[0]
                sub_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
                value = total_layers if field.name == block_key else field.contents()
                writer.add_key_value(field.name, value, value_type, sub_type=sub_type)
        writer.add_uint16(gguf.Keys.Split.LLM_KV_SPLIT_NO, k)
        writer.add_uint16(gguf.Keys.Split.LLM_KV_SPLIT_COUNT, n)
        writer.add_int32(gguf.Keys.Split.LLM_KV_SPLIT_TENSORS_COUNT, total_tensors)

        tensors = kept(k, reader)
        names = []
        for t in tensors:
            m = LAYER.match(t.name)
            if m and int(m.group(1)) >= layers[k]:
                raise SystemExit(f"{path}: tensor {t.name} is past the piece's {layers[k]} layers")
            names.append(f"blk.{first_layer + int(m.group(1))}.{m.group(2)}" if m else t.name)
        for name, t in zip(names, tensors):
            writer.add_tensor_info(name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for t in tensors:
            writer.write_tensor_data(t.data, tensor_endianess=reader.endianess)
        writer.close()
        print(f"{out}: layers {first_layer}-{first_layer + layers[k] - 1}, {len(tensors)} tensors", file=sys.stderr)
        first_layer += layers[k]
        # The piece's mapping goes with its last reference: only then does unlinking free the disk.
        tensors = t = reader = None
        readers[k] = None
        if delete:
            path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
