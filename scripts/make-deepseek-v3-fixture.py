#!/usr/bin/python3
"""Make tests/data/fixtures/deepseek_v3_mscale: a DeepSeek-V3 oracle fixture whose YaRN has mscale != mscale_all_dim.

Same layout and meanings as the other fixtures in tests/data/fixtures (see its README.md): config.json and
generation_config.json written by transformers' save_pretrained, model.safetensors (bf16 with the hub's
tensor names, one gate/up/down per expert, e_score_correction_bias F32), manifest.json, and reference/
{input_ids.json, greedy.json, logits.npy, hidden.npy, router_topk_idx.npy, router_topk_weight.npy,
meta.json}, all from transformers' own DeepseekV3ForCausalLM (the transformers source at commit 147b7aa0,
v5.3.0.dev0) loaded with from_pretrained(dtype=float32, eager attention, eager experts) from the bf16
file, on Debian's python3-torch 1.13.1 through scripts/hf_shims/.

What this fixture adds to the others: dims none of them has (hidden 96, 6 heads, q_lora 48, kv_lora 24,
nope 16 = rope 16, v 24, 16 experts, top-4, 2 shared experts, two dense layers of four), n_group 4 with
topk_group 2, norm_topk_prob false, routed_scaling_factor 1.5, and YaRN with mscale 0.707 against
mscale_all_dim 1.0, so cos and sin carry a factor mscale(40, 0.707) / mscale(40, 1.0) != 1 on top of the
softmax scale's mscale(40, 1.0)^2.

Weights: numpy default_rng(seed) standard normal, scaled per tensor (gain / sqrt(fan_in) for matrices,
1 + 0.1 n for norms, 0.1 n for the correction bias). Prompt: default_rng([seed, attempt]).integers(3,
vocab - 3, 24), the first attempt whose 32 greedy steps all have a top1-top2 margin >= 0.05.

Run:
  /usr/bin/python3 scripts/make-deepseek-v3-fixture.py --transformers-src <transformers>/src \
      --out tests/data/fixtures/deepseek_v3_mscale
"""
import argparse
import hashlib
import json
import math
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_shims  # noqa: E402

VOCAB, BOS, EOS, PAD = 768, 0, 767, 766
PROMPT_LEN, GEN = 24, 32
MIN_MARGIN = 0.05
DIMS = {"vocab": VOCAB, "hidden": 96, "layers": 4, "heads": 6, "q_lora": 48, "kv_lora": 24, "nope": 16, "rope": 16,
        "v": 24, "experts": 16, "topk": 4, "moe_inter": 24, "inter": 192, "first_dense": 2, "n_shared": 2,
        "n_group": 4, "topk_group": 2, "norm_topk_prob": False, "routed_scaling_factor": 1.5, "yarn": True,
        "mscale": 0.707, "mscale_all_dim": 1.0}


def config(transformers):
    d = DIMS
    cfg = transformers.DeepseekV3Config(
        vocab_size=VOCAB, hidden_size=d["hidden"], intermediate_size=d["inter"], moe_intermediate_size=d["moe_inter"],
        num_hidden_layers=d["layers"], num_attention_heads=d["heads"], num_key_value_heads=d["heads"],
        n_shared_experts=d["n_shared"], n_routed_experts=d["experts"], routed_scaling_factor=d["routed_scaling_factor"],
        kv_lora_rank=d["kv_lora"], q_lora_rank=d["q_lora"], qk_rope_head_dim=d["rope"], v_head_dim=d["v"],
        qk_nope_head_dim=d["nope"], n_group=d["n_group"], topk_group=d["topk_group"], num_experts_per_tok=d["topk"],
        first_k_dense_replace=d["first_dense"], norm_topk_prob=d["norm_topk_prob"], max_position_embeddings=163840,
        rms_norm_eps=1e-6, pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS, tie_word_embeddings=False,
        rope_interleave=True,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                         "original_max_position_embeddings": 4096, "beta_fast": 32.0, "beta_slow": 1.0,
                         "mscale": d["mscale"], "mscale_all_dim": d["mscale_all_dim"]},
        attn_implementation="eager")
    cfg.architectures = ["DeepseekV3ForCausalLM"]
    return cfg


def hub_shapes(cfg):
    """name -> shape of every checkpoint tensor, with the hub's names (one gate/up/down per expert)."""
    h, d = cfg.hidden_size, DIMS
    qk = d["nope"] + d["rope"]
    shapes = {"model.embed_tokens.weight": (VOCAB, h), "lm_head.weight": (VOCAB, h), "model.norm.weight": (h,)}
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
            p + "self_attn.q_a_proj.weight": (d["q_lora"], h), p + "self_attn.q_a_layernorm.weight": (d["q_lora"],),
            p + "self_attn.q_b_proj.weight": (d["heads"] * qk, d["q_lora"]),
            p + "self_attn.kv_a_proj_with_mqa.weight": (d["kv_lora"] + d["rope"], h),
            p + "self_attn.kv_a_layernorm.weight": (d["kv_lora"],),
            p + "self_attn.kv_b_proj.weight": (d["heads"] * (d["nope"] + d["v"]), d["kv_lora"]),
            p + "self_attn.o_proj.weight": (h, d["heads"] * d["v"]),
        })
        if i < d["first_dense"]:
            mlps = {"mlp.": d["inter"]}
        else:
            mlps = {f"mlp.experts.{e}.": d["moe_inter"] for e in range(d["experts"])}
            mlps["mlp.shared_experts."] = d["moe_inter"] * d["n_shared"]
            shapes[p + "mlp.gate.weight"] = (d["experts"], h)
            shapes[p + "mlp.gate.e_score_correction_bias"] = (d["experts"],)
        for m, inter in mlps.items():
            shapes.update({p + m + "gate_proj.weight": (inter, h), p + m + "up_proj.weight": (inter, h),
                           p + m + "down_proj.weight": (h, inter)})
    return shapes


def gain(name):
    if "embed_tokens" in name:
        return None
    if name == "lm_head.weight":
        return 4.8
    if "mlp.gate.weight" in name:
        return 2.0
    if "experts." in name:
        return 1.5
    if "o_proj" in name or "down_proj" in name:
        return 1.0
    return 1.2


def random_weights(np, torch, shapes, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for name in sorted(shapes):
        x = rng.standard_normal(shapes[name])
        if name.endswith("e_score_correction_bias"):
            out[name] = torch.tensor(0.1 * x, dtype=torch.float32)
            continue
        if name.endswith("norm.weight"):
            x = 1.0 + 0.1 * x
        elif gain(name) is not None:
            x = x * gain(name) / math.sqrt(shapes[name][1])
        out[name] = torch.tensor(x, dtype=torch.float32).to(torch.bfloat16)
    return out


def raw_bytes(torch, t):
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).contiguous().numpy().tobytes()


def manifest(torch, tensors, path):
    with open(path, "rb") as f:
        file_sha = hashlib.sha256(f.read()).hexdigest()
    rows = []
    for name in sorted(tensors):
        t = tensors[name]
        raw = raw_bytes(torch, t)
        rows.append({"name": name, "dtype": "BF16" if t.dtype == torch.bfloat16 else "F32", "shape": list(t.shape),
                     "nbytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()})
    return {"file": "model.safetensors", "file_sha256": file_sha, "metadata": {"format": "pt"}, "tensors": rows}


def fused_state(torch, tensors, cfg):
    """The hub tensors in transformers 5's module layout (routed experts fused), float32, to compare the reload."""
    state = {}
    for name, t in tensors.items():
        if ".mlp.experts." not in name:
            state[name] = t.float()
    for i in range(DIMS["first_dense"], cfg.num_hidden_layers):
        p = f"model.layers.{i}.mlp.experts."
        E = DIMS["experts"]
        state[p + "gate_up_proj"] = torch.stack([torch.cat([tensors[f"{p}{e}.gate_proj.weight"],
                                                            tensors[f"{p}{e}.up_proj.weight"]]) for e in range(E)]).float()
        state[p + "down_proj"] = torch.stack([tensors[f"{p}{e}.down_proj.weight"] for e in range(E)]).float()
    return state


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--transformers-src", required=True, help="the transformers source's src/ (commit 147b7aa0)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=4711)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))

    transformers = hf_shims.install(args.transformers_src)
    import numpy as np
    import torch
    from safetensors.torch import save_file
    torch.set_num_threads(args.threads)
    start = time.time()
    transformers.set_seed(1234)
    os.makedirs(os.path.join(args.out, "reference"), exist_ok=True)

    cfg = config(transformers)
    tensors = random_weights(np, torch, hub_shapes(cfg), args.seed)
    st_path = os.path.join(args.out, "model.safetensors")
    save_file(tensors, st_path, metadata={"format": "pt"})
    cfg.dtype = torch.bfloat16
    cfg.save_pretrained(args.out)
    transformers.GenerationConfig(bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, do_sample=False).save_pretrained(args.out)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest(torch, tensors, st_path), f, indent=1)

    model = transformers.DeepseekV3ForCausalLM.from_pretrained(
        args.out, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager")
    model.eval()
    want = fused_state(torch, tensors, cfg)
    loaded = model.state_dict()
    if set(loaded) != set(want):
        raise SystemExit(f"reload: module tensors differ from the checkpoint's: {sorted(set(loaded) ^ set(want))}")
    for name, t in loaded.items():
        if t.dtype != torch.float32 or not torch.equal(t, want[name]):
            raise SystemExit(f"reload: {name} is not the bf16 checkpoint tensor widened to f32")

    routed = []
    moes = [layer.mlp for layer in model.model.layers if hasattr(layer.mlp, "gate")]
    for moe in moes:
        orig = moe.route_tokens_to_experts

        def capture(logits, orig=orig):
            idx, weights = orig(logits)
            routed.append((idx.clone(), weights.clone()))
            return idx, weights
        moe.route_tokens_to_experts = capture

    with torch.no_grad():
        best = None
        for attempt in range(12):
            prompt = np.random.default_rng([args.seed, attempt]).integers(3, VOCAB - 3, PROMPT_LEN).tolist()
            out = model.generate(torch.tensor([prompt]), do_sample=False, num_beams=1, max_new_tokens=GEN,
                                 min_new_tokens=GEN, eos_token_id=None, pad_token_id=PAD, use_cache=True,
                                 output_logits=True, return_dict_in_generate=True)
            steps = [s[0].float() for s in out.logits]
            margins = [float(torch.topk(s, 2).values[0] - torch.topk(s, 2).values[1]) for s in steps]
            if best is None or min(margins) > min(best[3]):
                best = (attempt, prompt, out, margins, steps)
            if min(margins) >= MIN_MARGIN:
                break
        attempt, prompt, out, margins, steps = best
        if min(margins) < MIN_MARGIN:
            raise SystemExit(f"no prompt in 12 attempts has all greedy margins >= {MIN_MARGIN} (best {min(margins):.4f})")
        full = out.sequences[0].tolist()
        generated = full[PROMPT_LEN:]

        routed.clear()
        tf = model(input_ids=torch.tensor([full]), use_cache=False, output_hidden_states=True)
        logits = tf.logits[0].float()
        hidden = torch.stack([h[0] for h in tf.hidden_states]).float()
        T = len(full)
        k = DIMS["topk"]
        idx_all = np.zeros((len(moes), T, k), dtype=np.int32)
        w_all = np.zeros((len(moes), T, k), dtype=np.float32)
        for layer, (idx, w) in enumerate(routed):
            for t in range(T):
                pairs = sorted(zip(w[t].tolist(), idx[t].tolist()), key=lambda p: (-p[0], p[1]))
                idx_all[layer, t] = [e for _, e in pairs]
                w_all[layer, t] = [x for x, _ in pairs]
        cached_vs_tf = max(float((steps[j] - logits[PROMPT_LEN - 1 + j]).abs().max()) for j in range(GEN))
        tf_argmax = logits[PROMPT_LEN - 1:T - 1].argmax(-1).tolist() == generated

    ref = os.path.join(args.out, "reference")
    with open(os.path.join(ref, "input_ids.json"), "w") as f:
        json.dump({"input_ids": prompt}, f)
    top2 = [torch.topk(s, 2).indices.tolist() for s in steps]
    with open(os.path.join(ref, "greedy.json"), "w") as f:
        json.dump({"prompt_len": PROMPT_LEN, "generated": generated, "full_sequence": full, "top1_top2_margin": margins,
                   "top1_top2_ids": top2, "min_margin": min(margins)}, f, indent=1)
    np.save(os.path.join(ref, "logits.npy"), logits.numpy().astype(np.float32))
    np.save(os.path.join(ref, "hidden.npy"), hidden.numpy().astype(np.float32))
    np.save(os.path.join(ref, "router_topk_idx.npy"), idx_all)
    np.save(os.path.join(ref, "router_topk_weight.npy"), w_all)

    attn = model.model.layers[0].self_attn
    meta = {
        "fixture": os.path.basename(os.path.normpath(args.out)), "family": "deepseek_v3",
        "model_class": "DeepseekV3ForCausalLM", **hf_shims.versions(),
        "set_seed": 1234, "fixture_seed": args.seed,
        "prompt_rng": f"numpy default_rng([fixture_seed, {attempt}]).integers(3, vocab-3) (first attempt with min "
                      f"greedy margin >= {MIN_MARGIN}, of at most 12)",
        "weight_rng": "numpy default_rng(fixture_seed) standard_normal over the checkpoint names in sorted order; "
                      "matrices x gain/sqrt(fan_in) (embeddings x1), norms 1 + 0.1 n, e_score_correction_bias 0.1 n",
        "dims": DIMS, "prompt_len": PROMPT_LEN, "gen_tokens": GEN, "seq_len": T,
        "checkpoint_dtypes": ["BF16", "F32"],
        "compute_dtype": "float32 (from_pretrained(dtype=torch.float32) of the bf16 checkpoint; bf16->f32 exact)",
        "attn_implementation": "eager", "experts_implementation": "eager",
        "loaded_tensors_verified_bit_exact": len(loaded), "checkpoint_tensors": len(tensors),
        "rope_cos_sin_factor": model.model.rotary_emb.attention_scaling,
        "softmax_scale": attn.scaling,
        "softmax_scale_note": "1/sqrt(qk_nope + qk_rope) x mscale(40, mscale_all_dim)^2; cos/sin x "
                              "mscale(40, mscale) / mscale(40, mscale_all_dim), mscale(f, m) = 0.1 m ln f + 1",
        "min_margin": min(margins),
        "teacher_forced_vs_cached_decode_max_abs_logit_diff": cached_vs_tf,
        "teacher_forced_argmax_equals_greedy": tf_argmax,
        "files": {
            "input_ids.json": "prompt token ids (raw ids, no tokenizer)",
            "greedy.json": "32 tokens from model.generate(do_sample=False, eos_token_id=None, KV cache on); margins are "
                           "top1-top2 of the raw per-step logits",
            "logits.npy": "float32 [T, vocab], ONE teacher-forced forward over prompt+generated, use_cache=False; row t "
                          "predicts token t+1",
            "hidden.npy": "float32 [n_layers+1, T, hidden]: [0]=embedding output, [i]=output of decoder layer i-1 for "
                          "i<n_layers, [n_layers]=final RMSNorm output",
            "router_topk_idx.npy": "int32 [n_moe_layers, T, top_k] selected expert ids (teacher-forced pass)",
            "router_topk_weight.npy": "float32 [n_moe_layers, T, top_k] weights multiplied into the expert outputs "
                                      "(chosen plain sigmoids, not renormalised here, x routed_scaling_factor); per "
                                      "position sorted by descending weight, ties by expert id",
            "router_layers": list(range(DIMS["first_dense"], DIMS["layers"])),
        },
        "shims": hf_shims.SHIMS, "stubs": hf_shims.STUBS, "elapsed_s": round(time.time() - start, 1),
    }
    with open(os.path.join(ref, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps({k: meta[k] for k in ("fixture", "min_margin", "rope_cos_sin_factor", "softmax_scale",
                                            "teacher_forced_vs_cached_decode_max_abs_logit_diff",
                                            "teacher_forced_argmax_equals_greedy", "prompt_rng")}, indent=1))


if __name__ == "__main__":
    main()
