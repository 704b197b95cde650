#!/usr/bin/env python3
"""Writes the GGUF dequantization references in tests/data/gguf/quants (run outside CI).

usage: /usr/bin/python3 scripts/make-gguf-quant-refs.py LLAMA_SRC [OUT_DIR]

LLAMA_SRC is a llama.cpp source tree: its gguf-py package (gguf.quants) is the reference. Needs
numpy (Debian's python3-numpy). For each type, one file <TYPE>.ref holds N blocks exactly as a
GGUF file stores them, then the N * block_values float32 values gguf.quants.dequantize gives for
them (little-endian): N = size / (block_bytes + 4 * block_values). Blocks come from
gguf.quants.quantize on random data where gguf-py can quantize the type; for the types it cannot
(Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and the i-quants) they are built byte-wise: random bytes with finite f16
scales, and for the i-quants below 4 bits grid indices set so that every entry of the type's grid
occurs. Extra blocks cover the edges: zero and subnormal scales, and for MXFP4 every exponent byte
0..255. The types added later (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL, IQ4_XS, then IQ2_XXS to IQ1_M)
come last, so the random draws of the files written before them, and so those files, stay as they
were.
"""
import sys
from pathlib import Path

import numpy as np

src = Path(sys.argv[1])
out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent.parent / "tests/data/gguf/quants"
sys.path.insert(0, str(src / "gguf-py"))
from gguf import GGMLQuantizationType as T, GGML_QUANT_SIZES, quants  # noqa: E402

rng = np.random.default_rng(20261201)


def random_values(n_blocks, block):
    """Normal values at a spread of scales, with a few zeros and outliers, one row per block."""
    scale = np.exp2(rng.integers(-12, 8, size=(n_blocks, 1))).astype(np.float32)
    x = (rng.standard_normal((n_blocks, block)).astype(np.float32) * scale)
    x[rng.random(x.shape) < 0.02] = 0
    x[0] = 0  # an all-zero block: scale 0
    return x


def f16_bytes(values):
    return np.asarray(values, dtype=np.float16).view(np.uint8).reshape(-1, 2)


def random_f16_scales(n):
    """Finite f16 scales: normals of several magnitudes, zero and a subnormal among them."""
    d = (rng.standard_normal(n) * np.exp2(rng.integers(-14, 2, size=n))).astype(np.float16)
    d[0] = 0
    if n > 1:
        d[1] = np.float16(2.0 ** -20)  # subnormal
    return f16_bytes(d)


def k_blocks(qtype, n):
    """Valid random K-quant blocks, field by field as ggml-common.h lays them out."""
    block_bytes = GGML_QUANT_SIZES[qtype][1]
    raw = rng.integers(0, 256, size=(n, block_bytes), dtype=np.uint8)
    if qtype in (T.Q4_K, T.Q5_K):  # d, dmin at the front
        raw[:, 0:2] = random_f16_scales(n)
        raw[:, 2:4] = random_f16_scales(n)[rng.permutation(n)]
    elif qtype in (T.Q6_K, T.Q3_K):  # d at the end
        raw[:, -2:] = random_f16_scales(n)
    elif qtype == T.Q2_K:  # d, dmin at the end
        raw[:, -4:-2] = random_f16_scales(n)
        raw[:, -2:] = random_f16_scales(n)[rng.permutation(n)]
    return raw


def write(qtype, blocks):
    assert blocks.dtype == np.uint8
    blocks = np.ascontiguousarray(blocks)
    values = quants.dequantize(blocks, qtype).astype(np.float32, copy=False).reshape(-1)
    block_values, block_bytes = GGML_QUANT_SIZES[qtype]
    assert blocks.size % block_bytes == 0 and values.size == blocks.size // block_bytes * block_values
    path = out / f"{qtype.name}.ref"
    path.write_bytes(blocks.tobytes() + values.astype("<f4").tobytes())
    print(f"{path}: {blocks.size // block_bytes} blocks, {values.size} values")


out.mkdir(parents=True, exist_ok=True)
for qtype, n in ((T.F32, 256), (T.F16, 256), (T.BF16, 256), (T.Q8_0, 48), (T.Q4_0, 48), (T.MXFP4, 48)):
    block_values, block_bytes = GGML_QUANT_SIZES[qtype]
    x = random_values(n, max(block_values, 32)).reshape(-1)
    q = np.ascontiguousarray(quants.quantize(x.reshape(1, -1), qtype)).view(np.uint8).reshape(-1, block_bytes)
    if qtype in (T.F16, T.BF16):  # and every kind of half: random bit patterns (NaN, inf, subnormal)
        q = np.concatenate([q.reshape(-1, 2), rng.integers(0, 256, size=(256, 2), dtype=np.uint8)])
    if qtype == T.MXFP4:  # every exponent byte with random nibbles
        e = np.arange(256, dtype=np.uint8).reshape(-1, 1)
        q = np.concatenate([q, np.concatenate([e, rng.integers(0, 256, size=(256, 16), dtype=np.uint8)], axis=1)])
    if qtype in (T.Q8_0, T.Q4_0):  # byte-wise blocks too, with scales the quantizer never makes
        raw = rng.integers(0, 256, size=(16, block_bytes), dtype=np.uint8)
        raw[:, 0:2] = random_f16_scales(16)
        q = np.concatenate([q, raw])
    write(qtype, q)
for qtype in (T.Q4_K, T.Q5_K, T.Q6_K):
    write(qtype, k_blocks(qtype, 12))
for qtype, n in ((T.Q4_1, 48), (T.Q5_0, 48), (T.Q5_1, 48)):
    block_values, block_bytes = GGML_QUANT_SIZES[qtype]
    x = random_values(n, block_values).reshape(-1)
    q = np.ascontiguousarray(quants.quantize(x.reshape(1, -1), qtype)).view(np.uint8).reshape(-1, block_bytes)
    # byte-wise blocks too, with scales (and offsets) the quantizer never makes
    raw = rng.integers(0, 256, size=(16, block_bytes), dtype=np.uint8)
    raw[:, 0:2] = random_f16_scales(16)
    if qtype != T.Q5_0:
        raw[:, 2:4] = random_f16_scales(16)[rng.permutation(16)]
    write(qtype, np.concatenate([q, raw]))
for qtype in (T.Q2_K, T.Q3_K):
    write(qtype, k_blocks(qtype, 12))
iq4_nl = rng.integers(0, 256, size=(48, GGML_QUANT_SIZES[T.IQ4_NL][1]), dtype=np.uint8)
iq4_nl[:, 0:2] = random_f16_scales(48)
write(T.IQ4_NL, iq4_nl)
iq4_xs = rng.integers(0, 256, size=(12, GGML_QUANT_SIZES[T.IQ4_XS][1]), dtype=np.uint8)
iq4_xs[:, 0:2] = random_f16_scales(12)
write(T.IQ4_XS, iq4_xs)


# The i-quants below 4 bits: random bytes (every bit pattern is a valid block), finite f16 scales,
# and grid indices set so that every entry of the type's grid occurs at least once.
def set_grid_indices(qtype, raw, index):
    """Writes index[b, g] as grid entry g's index of block b, field by field as ggml lays it out."""
    n = raw.shape[0]
    low = (index & 0xFF).astype(np.uint8)
    if qtype == T.IQ2_XXS:  # per 32 values: four index bytes, then a u32 of signs and scale
        for s in range(8):
            raw[:, 2 + 8 * s:6 + 8 * s] = low[:, 4 * s:4 * s + 4]
    elif qtype == T.IQ2_XS:  # 32 u16: index in bits 0-8
        words = raw[:, 2:66].copy().view(np.uint16)
        words[:] = (words & 0xFE00) | index.astype(np.uint16)
        raw[:, 2:66] = words.view(np.uint8)
    elif qtype == T.IQ2_S:  # low bytes at 2, bits 8-9 two a entry in the 8 bytes at 66
        raw[:, 2:34] = low
        high = (index >> 8).reshape(n, 8, 4).astype(np.uint8) << np.array([0, 2, 4, 6], dtype=np.uint8)
        raw[:, 66:74] = np.bitwise_or.reduce(high, axis=2)
    elif qtype == T.IQ3_XXS:  # 64 index bytes
        raw[:, 2:66] = low
    elif qtype == T.IQ3_S:  # low bytes at 2, bit 8 one a entry in the 8 bytes at 66
        raw[:, 2:66] = low
        high = (index >> 8).reshape(n, 8, 8).astype(np.uint8) << np.arange(8, dtype=np.uint8)
        raw[:, 66:74] = np.bitwise_or.reduce(high, axis=2)
    elif qtype == T.IQ1_S:  # low bytes at 2, bits 8-10 three a entry in the u16 of each 32 values
        raw[:, 2:34] = low
        qh = raw[:, 34:50].copy().view(np.uint16)
        high = (index >> 8).reshape(n, 8, 4).astype(np.uint16) << np.array([0, 3, 6, 9], dtype=np.uint16)
        qh[:] = (qh & 0xF000) | np.bitwise_or.reduce(high, axis=2)
        raw[:, 34:50] = qh.view(np.uint8)
    elif qtype == T.IQ1_M:  # low bytes at 0, bits 8-10 in a nibble a entry (bit 3: delta's sign)
        raw[:, 0:32] = low
        nibbles = raw[:, 32:48].copy()
        high = (index >> 8).reshape(n, 16, 2).astype(np.uint8)
        nibbles = (nibbles & 0x88) | high[:, :, 0] | (high[:, :, 1] << 4)
        raw[:, 32:48] = nibbles


def iq_blocks(qtype, entries, per_block, n_extra):
    n = -(-entries // per_block) + n_extra
    n += n % 2  # the tests read two blocks a row
    raw = rng.integers(0, 256, size=(n, GGML_QUANT_SIZES[qtype][1]), dtype=np.uint8)
    index = rng.integers(0, entries, size=(n, per_block))
    cover = rng.permutation(np.resize(np.arange(entries), n * per_block))[: n * per_block]
    cover[:entries] = rng.permutation(entries)  # the first blocks hold every entry once
    index = cover.reshape(n, per_block)
    set_grid_indices(qtype, raw, index)
    d = random_f16_scales(n)
    if qtype == T.IQ1_M:  # d's four nibbles are the top nibbles of the four scale words
        bits = d.copy().view(np.uint16).reshape(n)
        words = raw[:, 48:56].copy().view(np.uint16)
        words[:] = (words & 0x0FFF) | ((bits.reshape(n, 1) >> np.array([0, 4, 8, 12], dtype=np.uint16)) & 0xF) << 12
        raw[:, 48:56] = words.view(np.uint8)
    else:
        raw[:, 0:2] = d
    return raw


for qtype, entries, per_block in ((T.IQ2_XXS, 256, 32), (T.IQ2_XS, 512, 32), (T.IQ2_S, 1024, 32),
                                  (T.IQ3_XXS, 256, 64), (T.IQ3_S, 512, 64), (T.IQ1_S, 2048, 32),
                                  (T.IQ1_M, 2048, 32)):
    write(qtype, iq_blocks(qtype, entries, per_block, 6))
