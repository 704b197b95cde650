#!/usr/bin/env python3
"""A model's source against its `stormo convert` container, streamed under a memory cap, in the
same run (docs/convert.md, docs/benchmarks.md).

Runs `stormo bench --json` in rounds. Each round runs, for every routing asked (`uniform`: the
model's own routes; anything else is passed as `--routing`, e.g. `synthetic`), the source and the
container one after the other, the order swapped every round, with the page cache dropped before
each run and the run placed in a memory cgroup capped at --cap (cgroup v2 or v1, as root), so the
expert budget is what a machine with that memory gets. Prints per configuration the median decode
tokens per second, expert bytes read per token, hit rate, the disk probe of the same run, the
decode's share of the disk bound (the probe's rate over the bytes a token read), and the rate the
store's reads got while a read was in flight over the probe's (reads/probe); then the container's speed over the source's, the median of the
rounds' ratios pair by pair; and checks that every run of a routing generated the same ids.

    scripts/bench-container.py --source bench/gpt-oss-20b --container bench/gpt-oss-20b-container \\
        --cap 8G --routing uniform,synthetic --rounds 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CGROUP_V2 = "/sys/fs/cgroup/cgroup.controllers"
CGROUP_V1 = "/sys/fs/cgroup/memory"


def make_cgroup(cap):
    """The directory of a fresh memory cgroup limited to `cap` bytes, and the file that holds its
    processes."""
    if os.path.exists(CGROUP_V2):
        path = "/sys/fs/cgroup/stormo-bench-container"
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "memory.max"), "w") as f:
            f.write(str(cap))
        return path
    path = os.path.join(CGROUP_V1, "stormo-bench-container")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
        f.write(str(cap))
    return path


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("IB").rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def drop_page_cache():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def bench(cmd, cgroup):
    drop_page_cache()
    if cgroup:
        # The shell joins the cgroup, then becomes stormo: every byte it maps or caches counts.
        line = 'echo $$ > "$0"/cgroup.procs && exec "$@"'
        cmd = ["sh", "-c", line, cgroup] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench-container: {' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout[out.stdout.find("{"):])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stormo", default="build/bin/stormo")
    ap.add_argument("--source", required=True)
    ap.add_argument("--container", required=True)
    ap.add_argument("--cap", default="8G", help="memory cap of every run (8G; 0: none)")
    ap.add_argument("--routing", default="uniform,synthetic", help="routings, comma-separated (uniform,synthetic)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=16)
    ap.add_argument("--gen-tokens", type=int, default=32)
    ap.add_argument("--disk-probe", default="1GiB")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    cap = parse_size(args.cap)
    cgroup = make_cgroup(cap) if cap else None
    models = {"source": args.source, "container": args.container}
    routings = [r for r in args.routing.split(",") if r]
    runs = {(r, m): [] for r in routings for m in models}
    for k in range(args.rounds):
        for routing in routings:
            order = list(models) if k % 2 == 0 else list(reversed(list(models)))
            for which in order:
                print(f"round {k + 1}: {routing} routing, {which}", file=sys.stderr, flush=True)
                cmd = [args.stormo, "bench", "--model", models[which], "--prompt-tokens", str(args.prompt_tokens),
                       "--gen-tokens", str(args.gen_tokens), "--threads", str(args.threads), "--disk-probe",
                       args.disk_probe, "--ram-probe", "256MiB", "--ram-repeats", "1", "--paired-probe", "0",
                       "--ram-probe-after", "0", "--json"]
                if routing != "uniform":
                    cmd += ["--routing", routing]
                runs[(routing, which)].append(bench(cmd, cgroup))

    print(f"source {args.source}; container {args.container}; cap {args.cap}; {args.prompt_tokens}-token prompt, "
          f"{args.gen_tokens} generated; {args.rounds} rounds, {args.threads} threads")
    head = f"{'routing':<10} {'model':<10} {'decode tok/s':>12} {'MB read/token':>14} {'hit rate':>9} " \
           f"{'disk GB/s':>10} {'of disk bound':>14} {'reads/probe':>12} {'budget':>12}"
    print(head)
    same_ids = True
    for routing in routings:
        for which in models:
            rs = runs[(routing, which)]
            def med(key, scale=1.0, fmt="{:.3f}"):
                values = [r.get(key) for r in rs]
                return "-" if None in values else fmt.format(statistics.median(values) / scale)
            print(f"{routing:<10} {which:<10} {med('decode_tokens_per_s'):>12} "
                  f"{med('expert_bytes_read_per_token', 1e6, '{:.1f}'):>14} {med('expert_hit_rate', 0.01, '{:.1f}%'):>9} "
                  f"{med('disk_read_bytes_per_s', 1e9, '{:.2f}'):>10} {med('disk_bound_ratio', 1.0, '{:.3f}x'):>14} "
                  f"{med('store_read_ratio', 1.0, '{:.3f}x'):>12} "
                  f"{rs[0]['expert_budget']:>12}")
        ratios = [c["decode_tokens_per_s"] / s["decode_tokens_per_s"]
                  for s, c in zip(runs[(routing, "source")], runs[(routing, "container")])]
        print(f"{routing:<10} container / source: {statistics.median(ratios):.3f}x "
              f"(rounds {' '.join(f'{x:.3f}' for x in ratios)})")
        ids = {json.dumps(r.get("tokens")) for m in models for r in runs[(routing, m)]}
        same_ids = same_ids and len(ids) == 1
    print(f"same ids in every run of a routing: {'yes' if same_ids else 'NO'}")
    return 0 if same_ids else 1


if __name__ == "__main__":
    sys.exit(main())
