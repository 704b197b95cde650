#!/usr/bin/env python3
"""One process against the experts split over ranks, in the same run (docs/distributed.md).

Runs `stormo bench --json` on one model in rounds, each round every configuration once in the
same order: one process with every expert in RAM; one process streaming its experts from disk
within each given budget (what one machine with that memory gets); and the experts split over
each given number of ranks under mpirun, every rank holding its share in RAM (rank 0 with
--threads T, the others with --rank-threads). Prints, per configuration, the median decode tokens
per second over the rounds, its ratio to each streaming configuration (the median of the rounds'
ratios, pair by pair), the expert hit rate, and under ranks what rank 0 exchanged per decode token
and waited per layer exchange; and checks that every configuration generated the same ids.

    scripts/bench-ranks.py --model bench/gpt-oss-20b --ranks 2:1/1,2:2/1,3:1/1,3:2/1 --stream-budgets 6GiB,4GiB
"""
import argparse
import json
import statistics
import subprocess
import sys


def bench(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench-ranks: {' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    start = out.stdout.find("{")
    return json.loads(out.stdout[start:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stormo", default="build/bin/stormo")
    ap.add_argument("--mpirun", default="mpirun --allow-run-as-root --oversubscribe")
    ap.add_argument("--model", required=True)
    ap.add_argument("--ranks", default="2,3",
                    help="rank counts to run, each N or N:T0/T1 (rank 0's threads / every other rank's) (2,3)")
    ap.add_argument("--stream-budgets", default="", help="expert budgets of the one-process streaming runs, comma-separated")
    ap.add_argument("--threads", type=int, default=2, help="threads of one process and of rank 0 (2)")
    ap.add_argument("--rank-threads", type=int, default=1, help="threads of every other rank (1)")
    ap.add_argument("--prompt-tokens", type=int, default=16)
    ap.add_argument("--gen-tokens", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    common = ["bench", "--model", args.model, "--prompt-tokens", str(args.prompt_tokens), "--gen-tokens",
              str(args.gen_tokens), "--ram-probe", "256MiB", "--ram-repeats", "1", "--paired-probe", "0",
              "--ram-probe-after", "0", "--json"]
    configs = [("one process, in RAM", [args.stormo] + common + ["--disk-probe", "0", "--threads", str(args.threads)])]
    streams = []
    for budget in filter(None, args.stream_budgets.split(",")):
        name = f"one process, streaming, budget {budget}"
        streams.append(name)
        configs.append((name, [args.stormo] + common + ["--disk-probe", "1GiB", "--threads", str(args.threads),
                                                        "--expert-budget", budget]))
    mpirun = args.mpirun.split()
    for spec in args.ranks.split(","):
        n, _, threads = spec.partition(":")
        n = int(n)
        t0, _, t1 = threads.partition("/") if threads else (str(args.threads), "", str(args.rank_threads))
        rank0 = [args.stormo] + common + ["--disk-probe", "0", "--threads", t0]
        others = [args.stormo] + common + ["--disk-probe", "0", "--threads", t1]
        configs.append((f"{n} ranks, threads {t0}/{t1}, shares in RAM",
                        mpirun + ["-np", "1"] + rank0 + [":", "-np", str(n - 1)] + others))

    results = {name: [] for name, _ in configs}
    for round_index in range(args.rounds):
        order = configs if round_index % 2 == 0 else list(reversed(configs))
        for name, cmd in order:
            print(f"round {round_index + 1}: {name}", file=sys.stderr, flush=True)
            results[name].append(bench(cmd))

    reference_tokens = results[configs[0][0]][0]["tokens"]
    print(f"model {args.model}; {args.prompt_tokens}-token prompt, {args.gen_tokens} generated; {args.rounds} rounds, "
          f"threads {args.threads} (rank 0) / {args.rank_threads} (other ranks)")
    header = f"{'configuration':<52} {'decode tok/s':>12} {'hit rate':>8}"
    for s in streams:
        header += f" {'/ ' + s.split('budget ')[1]:>12}"
    header += f" {'sent/token':>11} {'recv/token':>11} {'wait/exchange':>14} {'wait share':>10}"
    print(header)
    same = True
    for name, _ in configs:
        runs = results[name]
        same = same and all(r["tokens"] == reference_tokens for r in runs)
        tps = [r["decode_tokens_per_s"] for r in runs]
        line = f"{name:<52} {statistics.median(tps):>12.2f} {100 * statistics.median(r['expert_hit_rate'] for r in runs):>7.1f}%"
        for s in streams:
            ratios = [a["decode_tokens_per_s"] / b["decode_tokens_per_s"] for a, b in zip(runs, results[s])]
            line += f" {statistics.median(ratios):>11.3f}x"
        ranks = [r["ranks"] for r in runs if "ranks" in r]
        if ranks:
            line += (f" {statistics.median(x['bytes_sent_per_token'] for x in ranks) / 1024:>8.1f} KiB"
                     f" {statistics.median(x['bytes_received_per_token'] for x in ranks) / 1024:>7.1f} KiB"
                     f" {statistics.median(x['wait_seconds_per_layer_exchange'] for x in ranks) * 1e6:>11.0f} us"
                     f" {100 * statistics.median(x['wait_share'] for x in ranks):>9.1f}%")
        print(line)
    print("same ids in every run: " + ("yes" if same else "NO"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
