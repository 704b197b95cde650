#!/usr/bin/env python3
"""Writes the hand-made seeds of the gguf_header fuzz harness (tests/fuzz/seeds/gguf_header) with
gguf-py's GGUFWriter, an independent writer: small files with each kind of metadata value, several
tensor types and a custom alignment. Run outside CI; docs/fuzzing.md.

usage: /usr/bin/python3 scripts/make-gguf-fuzz-seeds.py LLAMA_SRC [OUT_DIR]
"""
import os, sys
from pathlib import Path

import numpy as np

sys.path.insert(0, sys.argv[1] + "/gguf-py")  # a llama.cpp source tree
out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent.parent / "tests/fuzz/seeds/gguf_header"
out.mkdir(parents=True, exist_ok=True)
os.chdir(out)
import gguf
from gguf import GGUFWriter, GGMLQuantizationType as T, quants
rng = np.random.default_rng(7)
def w(path, arch, tensors, extra=lambda g: None, alignment=None):
    g = GGUFWriter(path, arch)
    if alignment: g.add_custom_alignment(alignment)
    g.add_block_count(2); g.add_context_length(64); g.add_embedding_length(64)
    extra(g)
    for name, qt, shape in tensors:
        data = rng.standard_normal(shape).astype(np.float32)
        if qt in (T.F32,):
            g.add_tensor(name, data)
        elif qt == T.F16:
            g.add_tensor(name, data.astype(np.float16))
        else:
            q = quants.quantize(data, qt)
            g.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qt)
    g.write_header_to_file(); g.write_kv_data_to_file(); g.write_tensors_to_file(); g.close()
w('small-f32.gguf', 'gpt-oss', [('token_embd.weight', T.F32, (4, 8)), ('output_norm.weight', T.F32, (8,))])
w('quants.gguf', 'gpt-oss', [('a', T.Q8_0, (2, 32)), ('b', T.Q4_0, (1, 64)), ('c', T.BF16, (3, 4)), ('d', T.F16, (2, 2)), ('e', T.MXFP4, (1, 32))], alignment=64)
def tok(g):
    g.add_tokenizer_model('gpt2'); g.add_tokenizer_pre('gpt-4o')
    g.add_token_list(['a', 'b', 'ab', '<|end|>']); g.add_token_types([1, 1, 1, 3]); g.add_token_merges(['a b'])
    g.add_eos_token_id(3); g.add_chat_template('{{ messages }}'); g.add_float32('x.f', 0.5); g.add_array('x.i', [1, -2, 3])
    g.add_bool('x.b', True); g.add_uint64('x.u64', 2**40); g.add_int8('x.i8', -3)
w('tokenizer.gguf', 'qwen3moe', [('blk.0.attn_q.weight', T.F16, (4, 4))], tok)
