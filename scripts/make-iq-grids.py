#!/usr/bin/env python3
"""Writes host/include/stormo/gguf_iq_grid_codes.hpp: the grids of ggml's i-quants below 4 bits
(IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, and IQ1_S's, which IQ1_M shares), taken from gguf-py.

Usage: /usr/bin/python3 scripts/make-iq-grids.py LLAMA_SRC [OUT]

A grid entry is 8 (IQ2, IQ1) or 4 (IQ3) small values, each one of its type's value map (3 values
for IQ2 and IQ1, 8 for IQ3). The header stores each entry as the map indices of its values, value j
in bits [w*j, w*j + w) of a 16-bit word (w = 2 for 3-value maps, 3 for 8-value maps), the packing
gguf-py's grid_hex uses; stormo/gguf_iq_grids.hpp names the maps and expands the entries at compile
time. Needs numpy (Debian's python3-numpy).
"""
import sys
from pathlib import Path

import numpy as np

src = Path(sys.argv[1])
root = Path(__file__).resolve().parent.parent
out = Path(sys.argv[2]) if len(sys.argv) > 2 else root / "host/include/stormo/gguf_iq_grid_codes.hpp"
sys.path.insert(0, str(src / "gguf-py"))
from gguf import quants  # noqa: E402

GRIDS = (("IQ2_XXS", "kIq2XxsCodes"), ("IQ2_XS", "kIq2XsCodes"), ("IQ2_S", "kIq2SCodes"),
         ("IQ3_XXS", "kIq3XxsCodes"), ("IQ3_S", "kIq3SCodes"), ("IQ1_S", "kIq1SCodes"))


def codes(name):
    cls = getattr(quants, name)
    cls.init_grid()
    grid = cls.grid.reshape(cls.grid_shape)
    value_map = np.array(cls.grid_map, dtype=np.float32)
    width = 2 if len(value_map) <= 4 else 3
    index = np.argmax(grid[..., None] == value_map, axis=-1)
    assert (value_map[index] == grid).all(), name
    words = np.zeros(grid.shape[0], dtype=np.uint32)
    for j in range(grid.shape[1]):
        words |= index[:, j].astype(np.uint32) << (width * j)
    assert (words < 1 << 16).all()
    return words, [int(v) for v in cls.grid_map]


lines = [
    "#pragma once",
    "// Written by scripts/make-iq-grids.py from gguf-py's tables; do not edit. The grids of ggml's",
    "// i-quants, one 16-bit word an entry: value j's index into the type's value map in bits",
    "// [w*j, w*j + w), w = 2 for the 3-value maps (IQ2, IQ1), 3 for the 8-value ones (IQ3).",
    "// stormo/gguf_iq_grids.hpp names the maps and expands the entries.",
    "#include <array>",
    "#include <cstdint>",
    "",
    "namespace stormo::iq_grids {",
    "",
]
for name, symbol in GRIDS:
    words, value_map = codes(name)
    lines.append(f"// {name}: {len(words)} entries over the values {value_map}.")
    lines.append(f"inline constexpr std::array<uint16_t, {len(words)}> {symbol}{{{{")
    for i in range(0, len(words), 12):
        lines.append("    " + " ".join(f"0x{w:04x}," for w in words[i:i + 12]))
    lines.append("}};")
    lines.append("")
lines.append("}  // namespace stormo::iq_grids")
out.write_text("\n".join(lines) + "\n")
print(f"wrote {out}")
