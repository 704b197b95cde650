#!/usr/bin/python3
"""Train, measure and export a multi-token-prediction (MTP) layer for the GLM-MoE-DSA and DeepSeek-V3 demos.

The main model stays frozen: its weights are read from the demo's model.safetensors, never
trained, and written back byte for byte (export checks every tensor's bytes). The forward pass is
scripts/mtp/ (plain torch, float32, written from the published architectures; `check` measures it
against transformers' reference/logits.npy and, given a stormo binary, against `stormo logits`).
Needs only Debian's python3-torch and python3-numpy (1.13 is enough); use /usr/bin/python3.

  /usr/bin/python3 scripts/train-mtp.py check --demo models/glm-moe-dsa-demo [--stormo build/bin/stormo]
  nice -n 10 /usr/bin/python3 scripts/train-mtp.py train --demo models/glm-moe-dsa-demo --out <runs>/glm_mtp \
      --steps 1500 --max-minutes 14
  /usr/bin/python3 scripts/train-mtp.py export --demo models/glm-moe-dsa-demo --run <runs>/glm_mtp
  /usr/bin/python3 scripts/train-mtp.py measure --demo models/glm-moe-dsa-demo

`train` keeps the layer with the best draft acceptance on 150 validation problems (<out>/mtp.pt,
train.log, train.json). `export` adds it to model.safetensors as model.layers.<num_hidden_layers>.*
(bf16; DeepSeek-V3's layout also stores copies of the embedding and the head there, GLM-5's does
not), sets num_nextn_predict_layers 1 in config.json and writes reference/mtp.json,
mtp_hidden.npy and mtp_logits.npy. `measure` prints the acceptance of the layer stored in the demo
on the public eval prompts (reference/eval.json) and the 600 validation problems, none of them
trained on.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from mtp import checkpoint, data, drafting, reference, training  # noqa: E402


def eval_json(demo):
    return os.path.join(demo, "reference", "eval.json")


def check(args):
    """Max abs difference of this forward's logits (and hidden states) from transformers' and stormo's."""
    torch.set_num_threads(args.threads)
    cfg, main, tensors = checkpoint.load_main(args.demo)
    ref = np.load(os.path.join(args.demo, "reference", "logits.npy"))
    worst = {"transformers logits": 0.0, "stormo logits": 0.0, "stormo hidden": 0.0}
    for j, s in enumerate(reference.sequences(eval_json(args.demo))):
        states = []
        with torch.no_grad():
            logits, _ = main(torch.tensor([s["ids"]]), states)
        T = s["length"]
        worst["transformers logits"] = max(worst["transformers logits"], float(np.abs(logits[0].numpy() - ref[j, :T]).max()))
        if args.stormo:
            with tempfile.TemporaryDirectory() as tmp:
                lpath, hpath = os.path.join(tmp, "l.npy"), os.path.join(tmp, "h.npy")
                subprocess.run([args.stormo, "logits", "--model", args.demo, "--ids", ",".join(map(str, s["ids"])),
                                "--out", lpath, "--hidden-out", hpath], check=True, capture_output=True)
                engine_logits, engine_hidden = np.load(lpath), np.load(hpath)
            mine = torch.stack([h[0] for h in states]).numpy()
            worst["stormo logits"] = max(worst["stormo logits"], float(np.abs(logits[0].numpy() - engine_logits).max()))
            worst["stormo hidden"] = max(worst["stormo hidden"], float(np.abs(mine - engine_hidden).max()))
    scale = float(np.abs(ref).max())
    for what, d in worst.items():
        if what.startswith("stormo") and not args.stormo:
            continue
        print(f"{args.demo}: max |this - {what}| = {d:.3g} (logits scale {scale:.1f})")
    mtp = check_mtp_reference(args.demo, cfg, main, tensors)
    if worst["transformers logits"] > args.tolerance or worst["stormo logits"] > args.tolerance or mtp > args.tolerance:
        raise SystemExit(f"check: logits differ by more than {args.tolerance}")


def check_mtp_reference(demo, cfg, main, tensors):
    """The stored MTP layer against reference/mtp_logits.npy (0 when the demo has neither)."""
    layer = checkpoint.load_mtp(cfg, tensors)
    path = os.path.join(demo, "reference", "mtp_logits.npy")
    if layer is None or not os.path.exists(path):
        return 0.0
    ref, worst = np.load(path), 0.0
    with torch.no_grad():
        for j, s in enumerate(reference.sequences(eval_json(demo))):
            logits, _, _ = drafting.mtp_rows(main, layer, torch.tensor([s["ids"]]))
            worst = max(worst, float(np.abs(logits[0].numpy() - ref[j, :s["length"] - 1]).max()))
    print(f"{demo}: max |this MTP layer - reference/mtp_logits.npy| = {worst:.3g}")
    return worst


def train(args):
    torch.set_num_threads(args.threads)
    cfg, main, _ = checkpoint.load_main(args.demo)
    os.makedirs(args.out, exist_ok=True)
    _, val = data.held_out(eval_json(args.demo))
    rng = np.random.RandomState(args.seed)
    selection = [val[i] for i in sorted(rng.choice(len(val), 150, replace=False))]
    with open(os.path.join(args.out, "train.log"), "a") as log:
        layer, summary = training.train(main, cfg, eval_json(args.demo), log, args.steps, args.lr, args.warmup,
                                        args.batch, args.seed, args.mix, args.max_minutes, args.val_every,
                                        args.bias_rate, selection)
    torch.save({"mtp": layer.state_dict(), "demo": os.path.abspath(args.demo)}, os.path.join(args.out, "mtp.pt"))
    summary.update({"argv": sys.argv[1:], "threads": args.threads, "steps_planned": args.steps, "lr": args.lr,
                    "warmup": args.warmup, "batch": args.batch, "seed": args.seed, "mix": args.mix,
                    "params": sum(p.numel() for p in layer.parameters())})
    with open(os.path.join(args.out, "train.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary))


def measure_layer(demo, cfg, main, layer, depth):
    public, val = data.held_out(eval_json(demo))
    out = {}
    for name, problems in (("public", public), ("val", val)):
        stats = drafting.acceptance(main, layer, cfg, problems, depth)
        print(f"{demo} {name}: {drafting.describe(stats)}", flush=True)
        out[name] = stats
    return out


def measure(args):
    torch.set_num_threads(args.threads)
    cfg, main, tensors = checkpoint.load_main(args.demo)
    layer = checkpoint.load_mtp(cfg, tensors)
    if layer is None:
        raise SystemExit(f"measure: {checkpoint.weights_path(args.demo)} holds no model.layers.{cfg.layers}.* (run export)")
    measure_layer(args.demo, cfg, main, layer, args.depth)


def export(args):
    torch.set_num_threads(args.threads)
    cfg, main, _ = checkpoint.load_main(args.demo)
    layer = training.init_mtp(cfg, main, 0)
    layer.load_state_dict(torch.load(os.path.join(args.run, "mtp.pt"))["mtp"])
    # What the engine will read: the layer rounded to bf16 (the correction bias stays F32).
    with torch.no_grad():
        for name, t in layer.state_dict().items():
            if not name.endswith("e_score_correction_bias"):
                t.copy_(t.to(torch.bfloat16).float())
    layer.eval()
    new = checkpoint.mtp_tensors(cfg, layer, main, store_shared_copies=not cfg.glm)
    kept, added = checkpoint.write_with_mtp(args.demo, new)
    print(f"{checkpoint.weights_path(args.demo)}: {kept} main tensors byte-identical, {added} MTP tensors added")

    config_path = os.path.join(args.demo, "config.json")
    with open(config_path) as f:
        raw = json.load(f)
    raw["num_nextn_predict_layers"] = 1
    with open(config_path, "w") as f:
        json.dump(raw, f, indent=2)
        f.write("\n")

    cfg2, main2, tensors = checkpoint.load_main(args.demo)
    reloaded = checkpoint.load_mtp(cfg2, tensors)
    for name, t in reloaded.state_dict().items():
        if not torch.equal(t, layer.state_dict()[name]):
            raise SystemExit(f"export: {name} reloads differently from the bf16-rounded layer")
    command = ("scripts/train-mtp.py export --demo " + args.demo + " --run <runs>/" + os.path.basename(args.run.rstrip("/")))
    reference.write(args.demo, main2, reloaded, cfg2, command)
    stats = measure_layer(args.demo, cfg2, main2, reloaded, args.depth)
    with open(os.path.join(args.run, "export.json"), "w") as f:
        json.dump({"acceptance": stats, "main_tensors_unchanged": kept, "mtp_tensors": added}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="this forward against transformers' reference logits (and stormo's)")
    c.add_argument("--stormo", help="a stormo binary: also compare with `stormo logits` (logits and hidden states)")
    c.add_argument("--tolerance", type=float, default=1e-4)
    t = sub.add_parser("train")
    t.add_argument("--out", required=True)
    t.add_argument("--steps", type=int, default=1500)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--warmup", type=int, default=100)
    t.add_argument("--seed", type=int, default=11)
    t.add_argument("--bias-rate", type=float, default=1e-3)
    t.add_argument("--val-every", type=int, default=250)
    t.add_argument("--mix", default="add:3,sort:1,rev:1,copy:1")
    t.add_argument("--max-minutes", type=float, default=14)
    e = sub.add_parser("export")
    e.add_argument("--run", required=True)
    m = sub.add_parser("measure")
    for p in (c, t, e, m):
        p.add_argument("--demo", required=True)
        p.add_argument("--threads", type=int, default=1)
    for p in (e, m):
        p.add_argument("--depth", type=int, default=2, help="longest chained draft measured")
    args = ap.parse_args()
    {"check": check, "train": train, "export": export, "measure": measure}[args.cmd](args)


if __name__ == "__main__":
    main()
