#!/usr/bin/python3
"""Train and export models/deepseek-v3-demo: a tiny DeepseekV3ForCausalLM that adds, sorts, reverses and copies.

The model is transformers' own DeepseekV3ForCausalLM (the transformers source at commit 147b7aa0,
v5.3.0.dev0), float32, eager attention and experts, on Debian's python3-torch 1.13.1 through the
shims in scripts/hf_shims/. Same tasks, 64-id character vocabulary and chat format as the other
demos (models/glm-moe-dsa-demo/README.md); never trained on a public eval prompt (--exclude) nor a
validation prompt.

Run (Debian 12: apt-get install python3-torch python3-numpy python3-regex python3-packaging
python3-yaml python3-filelock python3-tqdm python3-requests libopenblas0-pthread; use /usr/bin/python3):

  nice -n 10 /usr/bin/python3 scripts/train-deepseek-v3-demo.py train --transformers-src <transformers>/src \
      --out <runs>/deepseek_v3 --exclude models/glm-moe-dsa-demo/reference/eval.json \
      --steps 3000 --threads 2 --max-minutes 45
  /usr/bin/python3 scripts/train-deepseek-v3-demo.py export --transformers-src <transformers>/src \
      --run <runs>/deepseek_v3 --demo models/deepseek-v3-demo --tokenizer-from models/glm-moe-dsa-demo \
      --exclude models/glm-moe-dsa-demo/reference/eval.json

`train` keeps the best validation checkpoint (<out>/best.pt) and a log; `--init` starts from a
previous best.pt with a fresh optimizer. `export` writes config.json, generation_config.json and a
bf16 model.safetensors with the hub's tensor names (one gate/up/down per expert; the router's
e_score_correction_bias stays F32), copies the tokenizer files, reloads the checkpoint with
from_pretrained(dtype=float32) and records accuracies in <run>/export.json for
scripts/deepseek-v3-demo-reference.py.
"""
import argparse
import json
import math
import os
import random
import shutil
import sys
import time

# OpenMP workers sleep instead of spinning while waiting: on a shared 2-core machine spinning
# threads made a step 3x slower than one thread.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_shims  # noqa: E402

CHARS = "0123456789abcdefghijklmnopqrstuvwxyz \n!*+,-.:=?"
END, PAD = 48, 49
VOCAB = 64
SEQLEN = 48
TASKS = ("add", "add2", "add3", "sort", "rev", "copy")
# Problems per task in each evaluation set (the public set's mix: 60/40/40/20/20/20 of 200).
MIX = {"add": 3, "add2": 2, "add3": 2, "sort": 1, "rev": 1, "copy": 1}
EVAL_SEEDS = {"val": 3003}
DEMO_PROMPTS = [("123+456=", "579"), ("999+1=", "1000"), ("48+75=", "123"), ("sort:dcab=", "abcd"),
                ("rev:hello=", "olleh"), ("copy:demo=", "demo")]


def encode(text):
    return [CHARS.index(c) for c in text]


def decode(ids):
    return "".join(CHARS[i] for i in ids if i < len(CHARS))


def number(rng, digits):
    return rng.randint(0, 9) if digits == 1 else rng.randint(10 ** (digits - 1), 10 ** digits - 1)


def make_problem(rng, task):
    """(task, prompt, answer) for one task; add = each operand 1-3 digits, add2/add3 fixed widths."""
    if task in ("add", "add2", "add3"):
        da, db = (rng.randint(1, 3), rng.randint(1, 3)) if task == "add" else ((2, 2) if task == "add2" else (3, 3))
        a, b = number(rng, da), number(rng, db)
        return task, f"{a}+{b}=", str(a + b)
    word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 7)))
    answer = {"sort": "".join(sorted(word)), "rev": word[::-1], "copy": word}[task]
    return task, f"{task}:{word}=", answer


def eval_set(seed, per_unit):
    rng = random.Random(seed)
    out = []
    for task, units in MIX.items():
        out += [make_problem(rng, task) for _ in range(units * per_unit)]
    return out


def public_problems(path):
    with open(path) as f:
        return [(p["task"], p["prompt"], p["expected_answer"]) for p in json.load(f)["problems"]]


def parse_mix(text):
    """--mix "add:3,sort:1,..." -> [(task, cumulative fraction)]; the default gives add (mixed widths)
    half the problems and each letter task a sixth."""
    pairs = [(t, float(w)) for t, w in (item.split(":") for item in text.split(","))]
    for t, _ in pairs:
        if t not in TASKS:
            raise SystemExit(f"--mix: unknown task {t!r} (tasks: {', '.join(TASKS)})")
    total, acc, out = sum(w for _, w in pairs), 0.0, []
    for t, w in pairs:
        acc += w / total
        out.append((t, acc))
    return out


def training_problem(rng, mix):
    r = rng.random()
    task = next((t for t, edge in mix if r < edge), mix[-1][0])
    return make_problem(rng, task)


def training_batch(torch, rng, batch, excluded, mix):
    """Rows of SEQLEN tokens packed with whole problems from position 0; targets only on answers + <|end|>."""
    ids = torch.full((batch, SEQLEN), PAD, dtype=torch.long)
    targets = torch.full((batch, SEQLEN), -100, dtype=torch.long)
    for row in range(batch):
        pos = 0
        while True:
            _, prompt, answer = training_problem(rng, mix)
            if prompt in excluded:
                continue
            p, a = encode(prompt), encode(answer) + [END]
            if pos + len(p) + len(a) > SEQLEN:
                break
            ids[row, pos:pos + len(p) + len(a)] = torch.tensor(p + a)
            targets[row, pos + len(p):pos + len(p) + len(a)] = torch.tensor(a)
            pos += len(p) + len(a)
    return ids, targets


def exact_match(torch, model, problems, chunk=100):
    """Greedy exact match (answer + <|end|>) per task, by teacher forcing: greedy decoding reproduces the
    answer exactly when every answer position's argmax is the answer's next token."""
    hits = {t: [0, 0] for t in TASKS}
    model.eval()
    with torch.no_grad():
        for s in range(0, len(problems), chunk):
            part = problems[s:s + chunk]
            seqs = [(encode(p), encode(a) + [END]) for _, p, a in part]
            T = max(len(p) + len(a) for p, a in seqs)
            ids = torch.full((len(part), T), PAD, dtype=torch.long)
            for i, (p, a) in enumerate(seqs):
                ids[i, :len(p) + len(a)] = torch.tensor(p + a)
            pred = model(input_ids=ids, use_cache=False).logits.argmax(-1)
            for i, (p, a) in enumerate(seqs):
                ok = bool((pred[i, len(p) - 1:len(p) + len(a) - 1] == torch.tensor(a)).all())
                hits[part[i][0]][0] += ok
                hits[part[i][0]][1] += 1
    model.train()
    acc = {t: h / n for t, (h, n) in hits.items() if n}
    acc["all"] = sum(h for h, _ in hits.values()) / sum(n for _, n in hits.values())
    return acc


def model_config(transformers):
    cfg = transformers.DeepseekV3Config(
        vocab_size=VOCAB, hidden_size=128, intermediate_size=256, moe_intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=4, n_shared_experts=1, n_routed_experts=8,
        routed_scaling_factor=2.5, kv_lora_rank=64, q_lora_rank=64, qk_rope_head_dim=16, v_head_dim=32,
        qk_nope_head_dim=32, n_group=4, topk_group=2, num_experts_per_tok=2, first_k_dense_replace=1,
        norm_topk_prob=True, max_position_embeddings=163840, rms_norm_eps=1e-6, pad_token_id=PAD,
        bos_token_id=None, eos_token_id=END, tie_word_embeddings=False, rope_interleave=True,
        # YaRN as DeepSeek-V3 ships it; rope_theta 1e4 (not 1e6): 16 rope dims learn addition faster.
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                         "original_max_position_embeddings": 4096, "beta_fast": 32.0, "beta_slow": 1.0,
                         "mscale": 1.0, "mscale_all_dim": 1.0},
        attn_implementation="eager")
    cfg.architectures = ["DeepseekV3ForCausalLM"]
    cfg._experts_implementation = "eager"
    return cfg


def moe_layers(model):
    return [layer.mlp for layer in model.model.layers if hasattr(layer.mlp, "gate")]


def record_loads(torch, model, loads):
    """Count each routed expert's picks per step (for the aux-loss-free bias update)."""
    for i, moe in enumerate(moe_layers(model)):
        orig = moe.route_tokens_to_experts

        def routed(logits, orig=orig, i=i, n=moe.n_routed_experts):
            idx, weights = orig(logits)
            loads[i] += torch.bincount(idx.reshape(-1), minlength=n).float()
            return idx, weights
        moe.route_tokens_to_experts = routed


def train(args):
    transformers = hf_shims.install(args.transformers_src)
    import torch
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)

    model = transformers.DeepseekV3ForCausalLM(model_config(transformers))
    if args.init:
        model.load_state_dict(torch.load(args.init)["model"])
    model.train()
    params = sum(p.numel() for p in model.parameters())

    mix = parse_mix(args.mix)
    val = eval_set(EVAL_SEEDS["val"], 60)
    excluded = {p for _, p, _ in public_problems(args.exclude)} | {p for _, p, _ in val}

    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98))
    n_moe = len(moe_layers(model))
    loads = [torch.zeros(8) for _ in range(n_moe)]
    record_loads(torch, model, loads)

    start = time.time()

    def lr_at(step):
        # Cosine over the planned steps or the wall-clock cap, whichever runs out first, so a run
        # cut by --max-minutes on a busy machine still ends at the low learning rate.
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        by_steps = (step - args.warmup) / max(1, args.steps - args.warmup)
        by_time = (time.time() - start) / (args.max_minutes * 60)
        t = min(1.0, max(by_steps, by_time))
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    log = open(os.path.join(args.out, "train.log"), "a")
    best = (-1.0, -1)
    step = 0
    stop_reason = "steps"
    while step < args.steps:
        if time.time() - start > args.max_minutes * 60 - 20:
            stop_reason = "max-minutes"
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        ids, targets = training_batch(torch, rng, args.batch, excluded, mix)
        for l in loads:
            l.zero_()
        logits = model(input_ids=ids, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), targets[:, 1:].reshape(-1),
                                                 ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        with torch.no_grad():
            for moe, load in zip(moe_layers(model), loads):
                moe.gate.e_score_correction_bias += args.bias_rate * torch.sign(load.mean() - load)
        step += 1
        if step % 25 == 0:
            line = f"step {step} loss {loss.item():.4f} lr {lr_at(step):.2e} t {time.time() - start:.0f}s"
            print(line, flush=True)
            log.write(line + "\n")
            log.flush()
        if step % args.val_every == 0 or step == args.steps:
            acc = exact_match(torch, model, val)
            score = acc["all"]
            line = f"val step {step}: " + " ".join(f"{k} {v:.3f}" for k, v in acc.items())
            print(line, flush=True)
            log.write(line + "\n")
            log.flush()
            if score >= best[0]:
                best = (score, step)
                torch.save({"model": model.state_dict(), "step": step}, os.path.join(args.out, "best.pt"))
    if step % args.val_every != 0 and step != args.steps:
        acc = exact_match(torch, model, val)
        if acc["all"] >= best[0]:
            best = (acc["all"], step)
            torch.save({"model": model.state_dict(), "step": step}, os.path.join(args.out, "best.pt"))
    summary = {"seed": args.seed, "steps_done": step, "steps_planned": args.steps, "stop": stop_reason,
               "batch": args.batch, "seqlen": SEQLEN, "lr": args.lr, "warmup": args.warmup,
               "bias_rate": args.bias_rate, "mix": args.mix, "best_step": best[1], "best_val_all": best[0],
               "train_seconds": round(time.time() - start, 1), "params": params, "threads": args.threads,
               "init": args.init, "argv": sys.argv[1:]}
    with open(os.path.join(args.out, "train.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary), flush=True)


def hub_tensors(torch, state):
    """The trained state dict under the hub's checkpoint names: transformers 5 keeps the routed experts
    fused ([E, 2I, H] gate then up, [E, H, I] down); checkpoints hold one gate/up/down per expert."""
    out = {}
    for name, t in state.items():
        if name.endswith("mlp.experts.gate_up_proj"):
            base = name[: -len("gate_up_proj")]
            inter = t.shape[1] // 2
            for e in range(t.shape[0]):
                out[f"{base}{e}.gate_proj.weight"] = t[e, :inter].to(torch.bfloat16)
                out[f"{base}{e}.up_proj.weight"] = t[e, inter:].to(torch.bfloat16)
        elif name.endswith("mlp.experts.down_proj"):
            base = name[: -len("down_proj")]
            for e in range(t.shape[0]):
                out[f"{base}{e}.down_proj.weight"] = t[e].to(torch.bfloat16)
        elif name.endswith("e_score_correction_bias"):
            out[name] = t.to(torch.float32)
        else:
            out[name] = t.to(torch.bfloat16)
    return {k: v.contiguous() for k, v in out.items()}


def export(args):
    transformers = hf_shims.install(args.transformers_src)
    import torch
    from safetensors.torch import save_file
    torch.set_num_threads(args.threads)
    start = time.time()
    os.makedirs(args.demo, exist_ok=True)

    cfg = model_config(transformers)
    trained = transformers.DeepseekV3ForCausalLM(cfg)
    trained.load_state_dict(torch.load(os.path.join(args.run, "best.pt"))["model"])
    trained.eval()

    tensors = hub_tensors(torch, trained.state_dict())
    save_file(tensors, os.path.join(args.demo, "model.safetensors"), metadata={"format": "pt"})
    cfg.dtype = torch.bfloat16
    cfg.save_pretrained(args.demo)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"):
        shutil.copy(os.path.join(args.tokenizer_from, name), os.path.join(args.demo, name))

    reloaded = transformers.DeepseekV3ForCausalLM.from_pretrained(
        args.demo, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager")
    reloaded.eval()
    # The reload must be the trained model rounded to bf16 (the bias kept F32), bit for bit.
    rounded = {k: (v if k.endswith("e_score_correction_bias") else v.to(torch.bfloat16).float())
               for k, v in trained.state_dict().items()}
    for k, v in reloaded.state_dict().items():
        if not torch.equal(v, rounded[k]):
            raise SystemExit(f"export: {k} reloads differently from the trained tensor rounded to bf16")

    public = public_problems(args.exclude)
    val = eval_set(EVAL_SEEDS["val"], 60)
    acc = {
        "accuracy_float32_trained": {"public": exact_match(torch, trained, public), "val": exact_match(torch, trained, val)},
        "accuracy_bf16_reloaded": {"public": exact_match(torch, reloaded, public), "val": exact_match(torch, reloaded, val)},
    }
    demos = []
    with torch.no_grad():
        for prompt, expected in DEMO_PROMPTS:
            out = reloaded.generate(torch.tensor([encode(prompt)]), do_sample=False, max_new_tokens=12,
                                    eos_token_id=END, pad_token_id=PAD)
            ids = out[0, len(prompt):].tolist()
            text = decode([i for i in ids if i != END])
            demos.append({"prompt": prompt, "output_text": text, "expected": expected, "correct": text == expected})
    summary = {"checkpoint_tensors": len(tensors), "params": sum(p.numel() for p in trained.parameters()),
               **acc, "demo_prompts": demos, "export_seconds": round(time.time() - start, 1)}
    with open(os.path.join(args.run, "export.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--out", required=True)
    t.add_argument("--init")
    t.add_argument("--steps", type=int, default=3000)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--warmup", type=int, default=200)
    t.add_argument("--seed", type=int, default=7)
    t.add_argument("--bias-rate", type=float, default=1e-3)
    t.add_argument("--val-every", type=int, default=250)
    t.add_argument("--mix", default="add:3,sort:1,rev:1,copy:1",
                   help="task weights of the training problems (add = each operand 1-3 digits; add2/add3 fixed widths)")
    t.add_argument("--max-minutes", type=float, default=45)
    e = sub.add_parser("export")
    e.add_argument("--run", required=True)
    e.add_argument("--demo", required=True)
    e.add_argument("--tokenizer-from", required=True)
    for p in (t, e):
        p.add_argument("--transformers-src", required=True, help="the transformers source's src/ (commit 147b7aa0)")
        p.add_argument("--exclude", required=True, help="an eval.json whose public prompts are never trained on")
        p.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    # OpenBLAS (Debian's libopenblas0-pthread as libblas.so.3; the netlib default is ~10x slower) gets
    # the same thread budget as torch.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))
    (train if args.cmd == "train" else export)(args)


if __name__ == "__main__":
    main()
