#!/usr/bin/python3
"""The trained gpt-oss demo inside a big model's shape: the demo's answers at a big model's cost.

The shipped demos are tiny (hidden 128, 4 layers): a decode step costs about 0.05 ms of compute and
no memory traffic to speak of, so speculation and batching cannot be judged on them the way they
run on a real model, where a step waits on gigabytes of weights. The big synthetic shapes
(`stormo synth`) have the real cost but random weights: they accept no real draft and answer
nothing. This script writes a checkpoint with both: the demo's function, padded with zeros into
gpt-oss-20b's widths (hidden 2880, 24 layers, 128 heads of 32 for 4096 query dims and 16 KV
heads, experts of 2880 with MXFP4 weights), so every step reads and multiplies about what a
gpt-oss-20b step does (1.49 GiB a token as stormo stores it, against gpt-oss-20b's 2.8 GB: the
vocabulary is the demo's 64, and 2 experts a layer against 4), while the answers stay the demo's. It keeps the demo's routing, 8 experts
and top-2, in every layer (`--experts 32` adds experts no token chooses).

How the function is kept:
- the residual stream holds the demo's 128 values in its first 128 dims and exact zeros elsewhere:
  the embedding, every o_proj and expert down_proj write nothing past dim 128;
- RMSNorm over 2880 dims of which 128 are nonzero: the norms' weights are scaled by sqrt(128/2880)
  (rounded to BF16) and eps by 128/2880, so each norm returns the demo's values;
- the demo's 4 heads sit where the grouped-query mapping (head h reads KV head h / 8) gives them
  the demo's KV heads (heads 0, 1 on KV 0; heads 8, 9 on KV 1); the other heads read zero values
  or are left out by o_proj;
- layers 0-3 are the demo's (any experts past its 8 are never chosen: router bias -9984); the 20
  layers after them run attention on random weights with zero values and route with the router of
  the demo's layer at the same place in its 4-layer cycle, to experts with random gate_up weights
  and zero down_proj: they cost a real layer and add nothing;
- every weight that meets only exact zeros is random rather than zero, so no layout that stores
  zeros compactly makes a step cheaper than the shape says;
- the experts are quantized to MXFP4 (as gpt-oss-20b's are), the one change to the function: the
  answers are measured, not assumed (docs/benchmarks.md, "Copy-heavy text on a trained model at
  gpt-oss-20b's widths": 198 of the 200 public problems right).

    /usr/bin/python3 scripts/inflate-demo.py --demo models/gpt-oss-demo --out /tmp/gpt-oss-demo-20b
"""
import argparse
import json
import math
import os
import shutil
import struct

import numpy as np

# gpt-oss-20b's widths; its 64 heads of 64 dims become 128 heads of the demo's 32 (the same 4096
# query and 512 KV dims). The demo's 8 experts (top-2) are kept: see the docstring.
SHAPE = {"hidden": 2880, "intermediate": 2880, "layers": 24, "experts": 8, "heads": 128, "kv-heads": 16}
FP4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
               dtype=np.float32)
MIDPOINTS = (FP4[1:8] + FP4[0:7]) / 2


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "BF16":
            raise SystemExit(f"inflate-demo: {path}: {name} is {t['dtype']}, the demo's tensors are BF16")
        b, e = t["data_offsets"]
        bits = np.frombuffer(data[b:e], dtype=np.uint16).astype(np.uint32) << 16
        out[name] = bits.view(np.float32).reshape(t["shape"])
    return out


def bf16(x):
    """Float32 to BF16 bits, nearest with ties to even (the values here are finite)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def mxfp4(w):
    """W [out, in] (in a multiple of 32) to MXFP4 blocks [out, in/32, 16] and scale bytes [out, in/32]."""
    blocks = w.reshape(w.shape[0], w.shape[1] // 32, 32)
    amax = np.abs(blocks).max(axis=-1)
    # The smallest power of two that brings the block's largest value within E2M1's 6.
    e = np.where(amax > 0, np.ceil(np.log2(np.maximum(amax, 1e-30) / 6.0)), 0.0)
    e = np.clip(e, -126, 127)
    scaled = blocks / np.exp2(e)[..., None]
    # The nearest E2M1 magnitude: the midpoints between FP4[0..7].
    codes = np.searchsorted(MIDPOINTS, np.abs(scaled)).astype(np.uint8)
    codes |= (scaled < 0).astype(np.uint8) << 3
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return packed.astype(np.uint8), (e + 127).astype(np.uint8)


def mxfp4_experts(w):
    """W [experts, out, in] to MXFP4, an expert at a time (bounded memory)."""
    parts = [mxfp4(w[e]) for e in range(w.shape[0])]
    return np.stack([b for b, _ in parts]), np.stack([s for _, s in parts])


def random_mxfp4(rng, shape):
    """Random MXFP4 weights [experts, out, in]: any nibble, scales near 2^-9 (values up to 0.012)."""
    blocks = rng.integers(0, 256, size=(*shape[:-1], shape[-1] // 32, 16), dtype=np.uint8)
    scales = rng.integers(116, 120, size=(*shape[:-1], shape[-1] // 32), dtype=np.uint8)
    return blocks, scales


def pad(a, shape):
    out = np.zeros(shape, dtype=np.float32)
    out[tuple(slice(0, n) for n in a.shape)] = a
    return out


class Writer:
    """Safetensors shards with an index, a tensor at a time."""

    def __init__(self, out, shards):
        self.out, self.shards, self.map, self.total = out, shards, {}, 0
        self.pending = []

    def add(self, name, dtype, array):
        self.pending.append((name, dtype, np.ascontiguousarray(array)))

    def flush(self, index):
        fname = f"model-{index + 1:05d}-of-{self.shards:05d}.safetensors"
        header, offset = {"__metadata__": {"format": "pt"}}, 0
        for name, dtype, a in self.pending:
            header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
            offset += a.nbytes
            self.map[name] = fname
        raw = json.dumps(header, separators=(",", ":")).encode()
        raw += b" " * (-len(raw) % 8)
        with open(os.path.join(self.out, fname), "wb") as f:
            f.write(struct.pack("<Q", len(raw)))
            f.write(raw)
            for _, _, a in self.pending:
                f.write(a.tobytes())
        self.total += offset
        self.pending = []

    def close(self):
        with open(os.path.join(self.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": self.total}, "weight_map": self.map}, f, indent=2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--demo", required=True, help="the gpt-oss demo directory")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    for name, value in SHAPE.items():
        ap.add_argument("--" + name, type=int, default=value)
    args = ap.parse_args()
    H, I, LAYERS, EXPERTS, HEADS, KV_HEADS = (args.hidden, args.intermediate, args.layers, args.experts, args.heads,
                                              args.kv_heads)

    with open(os.path.join(args.demo, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "gpt_oss":
        raise SystemExit(f"inflate-demo: {args.demo} is a {cfg.get('model_type')} model, not gpt_oss")
    d, di, dl, de = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["num_local_experts"]
    hd, dh, dkv = cfg["head_dim"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    group = HEADS // KV_HEADS
    if dh % dkv or dkv > KV_HEADS or dh // dkv > group or dl > LAYERS or de > EXPERTS or d > H or di > I:
        raise SystemExit(f"inflate-demo: {args.demo}'s shape does not fit inside the target's")
    if H % 32 or I % 32:
        raise SystemExit(f"inflate-demo: --hidden {H} and --intermediate {I} must be multiples of 32 (MXFP4 blocks)")
    # Demo head h reads KV head h // (dh / dkv); placed at the same slot of KV head's group here.
    head_at = [(h // (dh // dkv)) * group + h % (dh // dkv) for h in range(dh)]
    w = read_safetensors(os.path.join(args.demo, "model.safetensors"))
    rng = np.random.default_rng(args.seed)
    norm_scale = math.sqrt(d / H)

    # config.json is written last: a run that stops early leaves a directory no engine loads.
    if os.path.exists(args.out):
        raise SystemExit(f"inflate-demo: {args.out} exists; give a new directory")
    os.makedirs(args.out)
    shards = 4
    writer = Writer(args.out, shards)
    vocab = w["model.embed_tokens.weight"].shape[0]
    writer.add("model.embed_tokens.weight", "BF16", bf16(pad(w["model.embed_tokens.weight"], (vocab, H))))
    writer.add("lm_head.weight", "BF16", bf16(pad(w["lm_head.weight"], (vocab, H))))
    writer.add("model.norm.weight", "BF16", bf16(pad(w["model.norm.weight"] * norm_scale, (H,))))
    per_shard = math.ceil(LAYERS / shards)
    for layer in range(LAYERS):
        p, src = f"model.layers.{layer}.", f"model.layers.{layer}." if layer < dl else None
        for norm in ("input_layernorm", "post_attention_layernorm"):
            v = w[src + norm + ".weight"] if src else np.ones(d, dtype=np.float32)
            writer.add(p + norm + ".weight", "BF16", bf16(pad(v * norm_scale, (H,))))
        # Weights that meet only exact zeros (the residual's dims past d, the values of a KV head
        # set to zero) are random, not zero: stormo's packed BF16 layout stores runs of zeros in
        # fewer bytes, and a step must read what a real model's would.
        def noise(*shape):
            return rng.normal(0, 0.02, shape).astype(np.float32)
        q, qb, k, kb, o = noise(HEADS * hd, H), noise(HEADS * hd), noise(KV_HEADS * hd, H), noise(KV_HEADS * hd), noise(H, HEADS * hd)
        v, vb = noise(KV_HEADS * hd, H), np.zeros(KV_HEADS * hd, np.float32)
        ob = np.zeros(H, np.float32)
        sinks = noise(HEADS)
        router = noise(EXPERTS, H)
        router_bias = np.full(EXPERTS, -9984.0, np.float32)
        gate_up_bias = np.zeros((EXPERTS, 2 * I), np.float32)
        down_bias = np.zeros((EXPERTS, H), np.float32)
        # Routed as the demo's layer at the same place in its cycle: the demo's own choices and
        # their locality from token to token (random routers would give every verify and batch
        # a union no trained model has). Experts past the demo's never win (bias -9984).
        r = f"model.layers.{layer % dl}.mlp."
        router[:de, :d] = w[r + "router.weight"]
        router_bias[:de] = w[r + "router.bias"]
        if src:
            a = src + "self_attn."
            # KV heads past the demo's hold zero values, so the heads reading them add nothing
            # whatever o_proj says; the other heads of the demo's KV heads are silenced in o_proj.
            v[dkv * hd:] = 0.0
            o[:, :dkv * group * hd] = 0.0
            for h in range(dh):
                t, s = head_at[h] * hd, h * hd
                q[t:t + hd, :d] = w[a + "q_proj.weight"][s:s + hd]
                qb[t:t + hd] = w[a + "q_proj.bias"][s:s + hd]
                o[:d, t:t + hd] = w[a + "o_proj.weight"][:, s:s + hd]
                sinks[head_at[h]] = w[a + "sinks"][h]
            k[:dkv * hd, :d] = w[a + "k_proj.weight"]
            v[:dkv * hd, :d] = w[a + "v_proj.weight"]
            kb[:dkv * hd] = w[a + "k_proj.bias"]
            vb[:dkv * hd] = w[a + "v_proj.bias"]
            ob[:d] = w[a + "o_proj.bias"]
            m = src + "mlp."
            # The demo's experts are [in, out] (gate and up interleaved along out); here [out, in].
            gate_up = np.zeros((EXPERTS, 2 * I, H), np.float32)
            gate_up[:de, :2 * di, :d] = np.swapaxes(w[m + "experts.gate_up_proj"], 1, 2)
            gate_up_bias[:de, :2 * di] = w[m + "experts.gate_up_proj_bias"]
            gate_up = mxfp4_experts(gate_up)
            down = np.zeros((EXPERTS, H, I), np.float32)
            down[:de, :d, :di] = np.swapaxes(w[m + "experts.down_proj"], 1, 2)
            down_bias[:de, :d] = w[m + "experts.down_proj_bias"]
            down = mxfp4_experts(down)
        else:
            # A layer that costs what a real one does and adds nothing: every value is zero, so
            # attention's output is; the experts' down_proj is zeros.
            v[:] = 0.0
            gate_up = random_mxfp4(rng, (EXPERTS, 2 * I, H))
            down = (np.zeros((EXPERTS, H, I // 32, 16), np.uint8), np.full((EXPERTS, H, I // 32), 127, np.uint8))
        a = p + "self_attn."
        writer.add(a + "q_proj.weight", "BF16", bf16(q))
        writer.add(a + "q_proj.bias", "BF16", bf16(qb))
        writer.add(a + "k_proj.weight", "BF16", bf16(k))
        writer.add(a + "k_proj.bias", "BF16", bf16(kb))
        writer.add(a + "v_proj.weight", "BF16", bf16(v))
        writer.add(a + "v_proj.bias", "BF16", bf16(vb))
        writer.add(a + "o_proj.weight", "BF16", bf16(o))
        writer.add(a + "o_proj.bias", "BF16", bf16(ob))
        writer.add(a + "sinks", "BF16", bf16(sinks))
        m = p + "mlp."
        writer.add(m + "router.weight", "BF16", bf16(router))
        writer.add(m + "router.bias", "BF16", bf16(router_bias))
        blocks, scales = gate_up
        writer.add(m + "experts.gate_up_proj_blocks", "U8", blocks)
        writer.add(m + "experts.gate_up_proj_scales", "U8", scales)
        writer.add(m + "experts.gate_up_proj_bias", "BF16", bf16(gate_up_bias))
        blocks, scales = down
        writer.add(m + "experts.down_proj_blocks", "U8", blocks)
        writer.add(m + "experts.down_proj_scales", "U8", scales)
        writer.add(m + "experts.down_proj_bias", "BF16", bf16(down_bias))
        if (layer + 1) % per_shard == 0 or layer + 1 == LAYERS:
            writer.flush(layer // per_shard)
            print(f"inflate-demo: layers 0-{layer} written", flush=True)
    writer.close()

    cfg.update({
        "hidden_size": H, "intermediate_size": I, "num_hidden_layers": LAYERS, "num_local_experts": EXPERTS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
        "layer_types": [cfg["layer_types"][i % len(cfg["layer_types"])] for i in range(LAYERS)],
        "rms_norm_eps": cfg["rms_norm_eps"] * d / H,
        "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
            "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]},
    })
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    for name in ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if os.path.exists(os.path.join(args.demo, name)):
            shutil.copy(os.path.join(args.demo, name), args.out)
    os.makedirs(os.path.join(args.out, "reference"))
    shutil.copy(os.path.join(args.demo, "reference", "eval.json"), os.path.join(args.out, "reference"))
    print(f"inflate-demo: wrote {args.out} ({writer.total / 1e9:.2f} GB)")


if __name__ == "__main__":
    main()
