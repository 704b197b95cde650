#!/usr/bin/python3
"""Write models/deepseek-v3-demo/reference/{eval.json,logits.npy,meta.json}: what transformers says the demo does.

The exported bf16 checkpoint is loaded with DeepseekV3ForCausalLM.from_pretrained(dtype=float32,
attn_implementation='eager', experts_implementation='eager') from the transformers source at commit
147b7aa0 (v5.3.0.dev0) on Debian's python3-torch 1.13.1 (shims: scripts/hf_shims/). The 200 public
problems are the other demos' (read from --problems, an eval.json of another demo), so every demo
is held to the same prompts. Same layout as the other demos' reference/ files:
- eval.json: per problem the prompt ids, transformers' greedy output ids (model.generate, KV cache,
  stops at <|end|>, at most 12 new tokens), text, correctness and the per-step top1-top2 margins;
- logits.npy: float32 [4, T_max, 64], teacher-forced logits (use_cache=False) of the sequences listed
  in eval.json "logits_npy" (three problems with their greedy answers and one multi-turn context);
- meta.json: the training runs and export summary (from the runs' train.json / export.json), versions, shims.

Run:
  /usr/bin/python3 scripts/deepseek-v3-demo-reference.py --transformers-src <transformers>/src \
      --demo models/deepseek-v3-demo --problems models/glm-moe-dsa-demo/reference/eval.json \
      --runs <runs>/deepseek_v3 [<runs>/deepseek_v3_p2 ...]
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_shims  # noqa: E402

CHARS = "0123456789abcdefghijklmnopqrstuvwxyz \n!*+,-.:=?"
END, PAD = 48, 49
MAX_NEW = 12


def encode(text):
    return [CHARS.index(c) for c in text]


def decode(ids):
    return "".join(CHARS[i] for i in ids if i < len(CHARS))


def render(ids):
    return "".join(CHARS[i] if i < len(CHARS) else "<|end|>" for i in ids)


def greedy(torch, model, ids):
    """transformers' greedy ids (up to and including <|end|>) and the top1-top2 margin of each step."""
    out = model.generate(torch.tensor([ids]), do_sample=False, num_beams=1, max_new_tokens=MAX_NEW, eos_token_id=END,
                         pad_token_id=PAD, use_cache=True, output_logits=True, return_dict_in_generate=True)
    new = out.sequences[0, len(ids):].tolist()
    margins = []
    for step in out.logits:
        top = torch.topk(step[0].float(), 2).values
        margins.append(round(float(top[0] - top[1]), 5))
    return new, margins


def accuracy(problems):
    acc = {}
    for task in ("add", "add2", "add3", "sort", "rev", "copy"):
        sel = [p["correct"] for p in problems if p["task"] == task]
        if sel:
            acc[task] = round(sum(sel) / len(sel), 4)
    acc["all"] = round(sum(p["correct"] for p in problems) / len(problems), 4)
    return acc


def blas_name():
    """The BLAS library torch's libblas.so.3 resolved to in this process."""
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "blas" in line.lower() and "/" in line})
    return ", ".join(libs) or "unknown"


def placeholders(value, replace):
    """The runs' argv with this machine's paths written as <runs> and <transformers>, as the other demos do."""
    if isinstance(value, str):
        for old, new in replace:
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [placeholders(v, replace) for v in value]
    if isinstance(value, dict):
        return {k: placeholders(v, replace) for k, v in value.items()}
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--transformers-src", required=True, help="the transformers source's src/ (commit 147b7aa0)")
    ap.add_argument("--demo", required=True)
    ap.add_argument("--problems", required=True, help="an eval.json holding the 200 public problems")
    ap.add_argument("--runs", nargs="+", required=True, help="training run dirs in order (train.json; the last has export.json)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    # OpenBLAS (Debian's libopenblas0-pthread as libblas.so.3; the netlib default is ~10x slower) gets
    # the same thread budget as torch.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))

    transformers = hf_shims.install(args.transformers_src)
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    start = time.time()
    model = transformers.DeepseekV3ForCausalLM.from_pretrained(
        args.demo, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager")
    model.eval()

    with open(args.problems) as f:
        source = json.load(f)["problems"]
    problems = []
    with torch.no_grad():
        for i, p in enumerate(source):
            prompt_ids = encode(p["prompt"])
            out, margins = greedy(torch, model, prompt_ids)
            text = decode([t for t in out if t != END])
            expected_ids = encode(p["expected_answer"]) + [END]
            problems.append({"index": i, "task": p["task"], "prompt": p["prompt"], "prompt_ids": prompt_ids,
                             "expected_answer": p["expected_answer"], "expected_ids": expected_ids,
                             "output_ids": out, "output_text": text, "correct": out == expected_ids,
                             "min_margin": min(margins), "margins": margins})

        # Teacher-forced logits: three answered problems and a multi-turn context (two answered turns, then a
        # third answered by greedy decoding), the same choice as the other demos.
        sequences = []
        for j in (100, 140, 160):
            p = problems[j]
            ids = p["prompt_ids"] + p["output_ids"]
            sequences.append({"source": f"eval[{j}]", "ids": ids, "prompt_len": len(p["prompt_ids"])})
        turns = [problems[0], problems[180]]
        context = []
        for p in turns:
            context += p["prompt_ids"] + p["expected_ids"]
        context += problems[101]["prompt_ids"]
        out, margins = greedy(torch, model, context)
        sequences.append({"source": "multi-turn: eval[0] + eval[180] (answered) + eval[101]", "ids": context + out,
                          "prompt_len": len(context), "text": render(context + out),
                          "greedy_correct": out == problems[101]["expected_ids"], "margins": margins})
        T = max(len(s["ids"]) for s in sequences)
        logits = np.zeros((len(sequences), T, 64), dtype=np.float32)
        for j, s in enumerate(sequences):
            out = model(input_ids=torch.tensor([s["ids"]]), use_cache=False).logits[0]
            logits[j, :len(s["ids"])] = out.numpy()
            s["length"] = len(s["ids"])

    ref = os.path.join(args.demo, "reference")
    os.makedirs(ref, exist_ok=True)
    np.save(os.path.join(ref, "logits.npy"), logits)
    eval_json = {
        "set": "public", "family": "deepseek_v3", "n": len(problems), "accuracy": accuracy(problems),
        "generation": "transformers model.generate(do_sample=False, num_beams=1, max_new_tokens=12, eos_token_id=48, "
                      "use_cache=True) on from_pretrained(dtype=float32, attn_implementation='eager', "
                      "experts_implementation='eager') of the bf16 checkpoint; output_ids include the final <|end|> "
                      "(id 48) when produced; no BOS is added",
        "margins": "top1-top2 of the raw logits at each generated step (cached decode)",
        "logits_npy": {"file": "logits.npy", "shape": list(logits.shape), "dtype": "float32",
                       "meaning": "teacher-forced forward (use_cache=False) over each sequence's ids; row [j, t] predicts "
                                  "token t+1; rows t >= length are zero padding",
                       "sequences": sequences},
        "problems": problems,
    }
    with open(os.path.join(ref, "eval.json"), "w") as f:
        json.dump(eval_json, f, indent=1)

    trains = []
    replace = [(os.path.abspath(args.transformers_src), "<transformers>/src"), (args.transformers_src, "<transformers>/src")]
    replace += [(os.path.dirname(os.path.abspath(run)), "<runs>") for run in args.runs]
    for run in args.runs:
        with open(os.path.join(run, "train.json")) as f:
            trains.append(placeholders(json.load(f), replace))
    with open(os.path.join(args.runs[-1], "export.json")) as f:
        export = json.load(f)
    demos = []
    with torch.no_grad():
        for d in export["demo_prompts"]:
            out, margins = greedy(torch, model, encode(d["prompt"]))
            text = decode([t for t in out if t != END])
            demos.append({"prompt": d["prompt"], "output_ids": out, "output_text": text, "expected": d["expected"],
                          "correct": text == d["expected"] and out[-1] == END, "min_margin": min(margins)})
    meta = {
        "family": "deepseek_v3", "model_class": "DeepseekV3ForCausalLM", "params": export["params"],
        "checkpoint_tensors": export["checkpoint_tensors"], "train": trains,
        "accuracy_float32_trained": export["accuracy_float32_trained"],
        "accuracy_bf16_reloaded": export["accuracy_bf16_reloaded"],
        "accuracy_public_by_generate": eval_json["accuracy"],
        "accuracy_method": "accuracy_* are exact match of the teacher-forced argmax over answer + <|end|> (equal to "
                           "greedy exact match); accuracy_public_by_generate is from model.generate (eval.json)",
        "public_min_margin": min(p["min_margin"] for p in problems),
        "demo_prompts": demos, "eval_seeds": {"val": 3003},
        "public_problems": "the 200 prompts of the other demos' reference/eval.json",
        **hf_shims.versions(), "blas": blas_name(), "shims": hf_shims.SHIMS, "stubs": hf_shims.STUBS,
        "export_seconds": export["export_seconds"], "reference_seconds": round(time.time() - start, 1),
    }
    with open(os.path.join(ref, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps({"accuracy": eval_json["accuracy"], "demos": [(d["prompt"], d["output_text"]) for d in demos],
                      "logits": list(logits.shape)}, indent=1))


if __name__ == "__main__":
    main()
