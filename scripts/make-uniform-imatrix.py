#!/usr/bin/env python3
"""Writes a uniform importance matrix for llama-quantize: every input column of every weight
matrix whose rows hold whole 256-value blocks weighs 1.

Usage: /usr/bin/python3 scripts/make-uniform-imatrix.py LLAMA_SRC MODEL.gguf OUT.imatrix.gguf

llama-quantize refuses the i-quants below 4 bits (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS)
without an importance matrix. The test files need those types on a random-weight model, where no
text can say which columns matter, so each column gets the same weight: the matrix llama.cpp's
imatrix tool would write for activations of equal magnitude (the GGUF imatrix format: per matrix a
`<name>.in_sum2` of [columns, matrices] and a `<name>.counts` of [1, matrices]). Needs numpy.
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(sys.argv[1]) / "gguf-py"))
from gguf import GGUFReader, GGUFWriter  # noqa: E402

model, out = sys.argv[2], sys.argv[3]
reader = GGUFReader(model)
writer = GGUFWriter(out, arch="imatrix")
writer.add_string("general.type", "imatrix")
writer.add_array("imatrix.datasets", ["uniform"])
writer.add_uint32("imatrix.chunk_count", 1)
writer.add_uint32("imatrix.chunk_size", 1)
for t in reader.tensors:
    shape = [int(s) for s in t.shape]  # ggml's order: columns first
    if not t.name.endswith(".weight") or len(shape) < 2 or shape[0] % 256:
        continue
    matrices = shape[2] if len(shape) == 3 else 1
    writer.add_tensor(t.name + ".in_sum2", np.ones((matrices, shape[0]), dtype=np.float32))
    writer.add_tensor(t.name + ".counts", np.ones((matrices, 1), dtype=np.float32))
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
print(f"wrote {out}")
