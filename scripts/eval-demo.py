#!/usr/bin/env python3
"""A demo's public problems through one model file and one engine setting: accuracy and drift.

Answers every problem of a demo's reference/eval.json (the 200 public add, add2, add3, sort, rev
and copy problems, with transformers' own greedy ids) with `stormo generate` on MODEL, which may be
the demo directory itself or any file made from it (a GGUF at any type llama-quantize writes that
stormo reads), with the engine options given after `--`. Prints, per task, how many answers are
right and how many are transformers' ids exactly.

With `--drift-against BASE` it also runs `stormo logits` teacher-forced over every `--drift-every`
th problem (prompt and expected answer) on MODEL and on BASE (default settings) and prints the
median and largest of max|logits - BASE's| / max|BASE's| over those problems: how far a
quantized file, or a road, moves the logits from the unquantized model. Needs numpy.

    scripts/eval-demo.py --eval models/gpt-oss-demo/reference/eval.json --model demo-Q4_0.gguf -- --activations int8
    scripts/eval-demo.py --eval models/gpt-oss-demo/reference/eval.json --model demo-Q4_0.gguf \\
        --drift-against gpt-oss-demo-bf16.gguf -- --activations int8
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor


def generate(stormo, model, ids, extra):
    cmd = [stormo, "generate", "--model", model, "--ids", ",".join(map(str, ids)), "--max-tokens", "12",
           "--threads", "1"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"eval-demo: {' '.join(cmd)} failed: {out.stderr.strip()}")
    return [int(t) for t in out.stdout.split()]


def logits(stormo, model, ids, extra, path):
    import numpy
    cmd = [stormo, "logits", "--model", model, "--ids", ",".join(map(str, ids)), "--out", path,
           "--threads", "1"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"eval-demo: {' '.join(cmd)} failed: {out.stderr.strip()}")
    return numpy.load(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stormo", default="build/bin/stormo")
    ap.add_argument("--eval", required=True, help="a demo's reference/eval.json")
    ap.add_argument("--model", required=True)
    ap.add_argument("--jobs", type=int, default=2, help="problems answered at once (one thread each)")
    ap.add_argument("--drift-against", metavar="BASE", help="a model to compare teacher-forced logits with")
    ap.add_argument("--drift-every", type=int, default=5, help="every Nth problem for the drift")
    ap.add_argument("--end-id", type=int, metavar="ID",
                    help="cut each answer after this id: for a file that names no end token (a GGUF converted "
                         "without a tokenizer), the eval's own end id (eval.json's generation line)")
    ap.add_argument("extra", nargs="*", help="engine options, after --")
    a = ap.parse_args()

    with open(a.eval) as f:
        problems = json.load(f)["problems"]
    with ThreadPoolExecutor(a.jobs) as ex:
        answers = list(ex.map(lambda p: generate(a.stormo, a.model, p["prompt_ids"], a.extra), problems))
    if a.end_id is not None:
        answers = [got[:got.index(a.end_id) + 1] if a.end_id in got else got for got in answers]

    tasks = {}
    for p, got in zip(problems, answers):
        t = tasks.setdefault(p["task"], [0, 0, 0])
        t[0] += got == p["expected_ids"]
        t[1] += got == p["output_ids"]
        t[2] += 1
    right = sum(t[0] for t in tasks.values())
    same = sum(t[1] for t in tasks.values())
    print(f"{a.model} {' '.join(a.extra) or '(defaults)'}: {right}/{len(problems)} right, "
          f"{same}/{len(problems)} transformers' ids")
    for name, (r, s, n) in tasks.items():
        print(f"  {name:5s} right {r}/{n}, transformers' ids {s}/{n}")

    if a.drift_against:
        import numpy
        drift = []
        with tempfile.TemporaryDirectory() as tmp:
            for p in problems[::a.drift_every]:
                ids = p["prompt_ids"] + p["expected_ids"]
                base = logits(a.stormo, a.drift_against, ids, [], os.path.join(tmp, "base.npy"))
                ours = logits(a.stormo, a.model, ids, a.extra, os.path.join(tmp, "ours.npy"))
                drift.append(float(numpy.abs(ours - base).max() / numpy.abs(base).max()))
        print(f"  logits against {a.drift_against} over {len(drift)} problems: max|error| / max|base| "
              f"median {numpy.median(drift):.4f}, largest {max(drift):.4f}")


if __name__ == "__main__":
    main()
