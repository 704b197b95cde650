#!/usr/bin/env python3
"""Plain against speculative decoding on a demo's public problems, both sides in the same run.

Every problem of the chosen tasks in the demo's reference/eval.json is answered with `--speculate
off` and with the mode under test, in alternating order, `--repeats` times, and both sides must
produce the same token ids (exactness: a mismatch is an error, exit 1). The prompt's prefill is the
same on both sides and left out. Prints, per side, the decode tokens per second over all runs, the
ratio speculative / plain (the median of the pairs' ratios, and over all runs), the gate's choices
and the acceptance by source.

Two ways to run a side:
- `--process pipe` (default): one `stormo pipe` per side for the whole run, a TURN per problem, as
  a server or an editor plug-in would use the engine; a turn's decode time is from its first TOKEN
  line to its DONE line, measured here (the first token comes from the prefill). The gate learns
  the step costs across turns. The counts come from each side's `--stats` file at the end.
- `--process fresh`: one `stormo generate` per problem and side, decode seconds from its `--stats`
  file. Each answer of 5-9 tokens then also pays the first run of the speculation code in a new
  process (its code and data not yet in any cache: 50-80 us on this machine, about a tenth of such
  an answer's decode), which a long-lived process pays once.
- `--process serial`: pipes as above, but one alive at a time: per repeat each side's pipe answers
  every problem and stops, the sides' order alternating from repeat to repeat; for a model of which
  RAM holds one copy only (scripts/inflate-demo.py's). The gate then learns over one repeat's
  problems.

    scripts/bench-speculation.py --stormo build/bin/stormo --model models/glm-moe-dsa-demo \\
        --tasks copy,rev,sort --mode auto --repeats 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(stormo, model, ids, mode, draft_max, extra, stats_path):
    cmd = [stormo, "generate", "--model", model, "--ids", ",".join(map(str, ids)),
           "--max-tokens", "64", "--speculate", mode, "--stats", stats_path] + extra
    if mode != "off":
        cmd += ["--draft-max", str(draft_max)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench-speculation: {' '.join(cmd)} failed: {out.stderr.strip()}")
    with open(stats_path) as f:
        stats = json.load(f)
    tokens = [int(t) for t in out.stdout.split()]
    return tokens, stats


def count_speculation(spec, choices, drafted, accepted):
    for k, n in spec.get("gate_choices", {}).items():
        choices[int(k)] = choices.get(int(k), 0) + n
    for src, s in spec.get("by_source", {}).items():
        drafted[src] = drafted.get(src, 0) + s["drafted"]
        accepted[src] = accepted.get(src, 0) + s["accepted"]


class Pipe:
    """One `stormo pipe` process: a TURN per problem, timed from its first TOKEN to its DONE."""

    def __init__(self, stormo, model, mode, draft_max, extra, stats_path):
        cmd = [stormo, "pipe", "--model", model, "--speculate", mode, "--stats", stats_path] + extra
        if mode != "off":
            cmd += ["--draft-max", str(draft_max)]
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        ready = self.proc.stdout.readline().split()
        if not ready or ready[0] != "READY":
            sys.exit(f"bench-speculation: {' '.join(cmd)} did not start: {' '.join(ready)}")

    def turn(self, ids, temperature):
        self.proc.stdin.write(f"TURN 64 0 {temperature} 1 0 {len(ids)} {' '.join(map(str, ids))}\n")
        self.proc.stdin.flush()
        tokens, first = [], None
        while True:
            line = self.proc.stdout.readline()
            now = time.perf_counter()
            fields = line.split()
            if not fields:
                sys.exit(f"bench-speculation: {' '.join(self.cmd)} stopped")
            if fields[0] == "TOKEN":
                tokens.append(int(fields[1]))
                if first is None:
                    first = now
            elif fields[0] == "DONE":
                # The first token comes from the prefill: the decode made the rest.
                return tokens, (now - first) if first is not None else 0.0, max(0, len(tokens) - 1)
            else:
                sys.exit(f"bench-speculation: {' '.join(self.cmd)}: {line.strip()}")

    def close(self):
        self.proc.stdin.write("SHUTDOWN\n")
        self.proc.stdin.close()
        if self.proc.wait() != 0:
            sys.exit(f"bench-speculation: {' '.join(self.cmd)} failed")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stormo", default="build/bin/stormo")
    ap.add_argument("--model", required=True, help="a demo directory with reference/eval.json")
    ap.add_argument("--tasks", default="copy,rev,sort", help="comma-separated tasks of eval.json, or all")
    ap.add_argument("--mode", default="auto", help="the --speculate mode set against off")
    ap.add_argument("--draft-max", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--process", choices=["pipe", "serial", "fresh"], default="pipe",
                    help="one stormo pipe per side for the whole run (default); serial: one pipe at a time, a "
                         "side's pipe per repeat answering every problem, the sides' order alternating (for a "
                         "model of which RAM holds one copy only); or a stormo generate per answer")
    ap.add_argument("--extra", default="",
                    help="more engine options, space-separated (e.g. '--threads 1'); with --process fresh any generate option "
                         "(e.g. '--temperature 0.8 --seed 3')")
    args = ap.parse_args()

    with open(os.path.join(args.model, "reference", "eval.json")) as f:
        problems = json.load(f)["problems"]
    tasks = None if args.tasks == "all" else set(args.tasks.split(","))
    problems = [p for p in problems if tasks is None or p["task"] in tasks]
    if not problems:
        sys.exit(f"bench-speculation: no problem of tasks {args.tasks} in {args.model}")
    extra = args.extra.split()

    totals = {"off": [0, 0.0], "spec": [0, 0.0]}
    pair_ratios = []
    choices, drafted, accepted = {}, {}, {}
    mismatches = 0
    modes = {"off": "off", "spec": args.mode}
    with tempfile.TemporaryDirectory() as tmp:

        def open_pipe(side):
            return Pipe(args.stormo, args.model, modes[side], args.draft_max, extra, os.path.join(tmp, side + ".json"))

        def close_pipe(side, pipe):
            # The speculating side's statistics, summed over its turns, come from its --stats file.
            pipe.close()
            if side == "spec":
                with open(os.path.join(tmp, side + ".json")) as f:
                    count_speculation(json.load(f).get("speculation", {}), choices, drafted, accepted)

        pipes = {side: open_pipe(side) for side in modes} if args.process == "pipe" else {}
        stats_path = os.path.join(tmp, "stats.json")
        for r in range(args.repeats):
            answers = {}
            if args.process == "serial":
                # Each side answers every problem in a pipe of its own, one pipe alive at a time.
                for side in (["off", "spec"] if r % 2 == 0 else ["spec", "off"]):
                    pipe = open_pipe(side)
                    answers[side] = [pipe.turn(p["prompt_ids"], 0) for p in problems]
                    close_pipe(side, pipe)
            for i, p in enumerate(problems):
                order = ["off", "spec"] if (r + p["index"]) % 2 == 0 else ["spec", "off"]
                seen = {}
                for side in order:
                    if answers:
                        tokens, seconds, decoded = answers[side][i]
                    elif pipes:
                        tokens, seconds, decoded = pipes[side].turn(p["prompt_ids"], 0)
                    else:
                        tokens, stats = run(args.stormo, args.model, p["prompt_ids"], modes[side], args.draft_max, extra,
                                            stats_path)
                        seconds, decoded = stats["decode_seconds"], stats["generated_tokens"]
                        if side == "spec":
                            count_speculation(stats.get("speculation", {}), choices, drafted, accepted)
                    seen[side] = (tokens, seconds)
                    totals[side][0] += decoded
                    totals[side][1] += seconds
                if seen["off"][0] != seen["spec"][0]:
                    mismatches += 1
                    print(f"MISMATCH problem {p['index']} ({p['prompt']}): off {seen['off'][0]} vs {args.mode} {seen['spec'][0]}")
                t_off, t_spec = seen["off"][1], seen["spec"][1]
                if t_off > 0 and t_spec > 0:
                    pair_ratios.append(t_off / t_spec)
        for side, pipe in pipes.items():
            close_pipe(side, pipe)

    def rate(side):
        return totals[side][0] / totals[side][1] if totals[side][1] > 0 else float("nan")

    print(f"model {args.model}, tasks {args.tasks}: {len(problems)} problems x {args.repeats} repeats, "
          f"--speculate {args.mode} --draft-max {args.draft_max}, --process {args.process} {args.extra}".rstrip())
    print(f"plain       {totals['off'][0]:6d} tokens {totals['off'][1]:9.4f} s decode  {rate('off'):10.1f} tok/s")
    print(f"speculative {totals['spec'][0]:6d} tokens {totals['spec'][1]:9.4f} s decode  {rate('spec'):10.1f} tok/s")
    print(f"ratio speculative/plain: {rate('spec') / rate('off'):.3f} over all runs, "
          f"{statistics.median(pair_ratios):.3f} median of {len(pair_ratios)} pairs")
    print("gate choices (draft length: steps): " + ", ".join(f"{k}: {choices[k]}" for k in sorted(choices)))
    for src in sorted(drafted):
        share = accepted[src] / drafted[src] if drafted[src] else 0.0
        print(f"source {src}: drafted {drafted[src]}, accepted {accepted[src]} ({share:.1%})")
    print(f"same token ids: {'yes' if mismatches == 0 else f'NO ({mismatches} problems differ)'}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
