#!/usr/bin/env bash
# The race against llama.cpp on the same weights, in the same run, on an otherwise idle machine:
# both engines with the same thread count, prefill 64 tokens and decode 32 (by default), then a table of both
# engines' figures (tok/s, peak RSS), their ratios, and the RAM read bound of this run.
#
#   scripts/race-llamacpp.sh STORMO LLAMA_BIN_DIR MODEL MODEL.gguf [THREADS] [REPEATS]
#
# STORMO: the stormo binary; LLAMA_BIN_DIR: a llama.cpp build's bin/ (llama-bench); MODEL: what
# stormo runs, either the GGUF file itself (the same file as llama.cpp: the race of docs/gguf.md)
# or a Hugging Face directory such as `stormo synth --preset gpt-oss-20b --out MODEL_DIR`;
# MODEL.gguf: what llama.cpp runs (for a directory, convert_hf_to_gguf.py's output for it, MXFP4
# experts kept as MXFP4). THREADS defaults to 2, REPEATS (runs per engine and road, interleaved;
# medians reported) to 3. LLAMA_LABEL names the llama.cpp source in the output (a build from a
# source archive reports no commit of its own).
# stormo runs on the exact float road (default) and on the int8 road (`--activations int8`), greedy,
# with the head read by bound (its default). llama.cpp reads its weights into RAM (`-lm none`), as
# stormo does with every expert resident.
#
# Each round's figures follow the table, one line per engine and road, so a round that ran in a
# slow spell of the machine shows. KEEP=DIR keeps every run's JSON and stderr in DIR.
# The memory bound: each stormo run probes RAM itself (`bench`); each llama.cpp run has the same
# probe (`bench-kernels --ram-only`) right before and right after it, and its decode's GB/s (tok/s
# times the bytes a token reads from its GGUF, from `stormo inspect`) is printed against them: the
# "decode / memory bound" column for both engines, and a line saying whether any round beat it.
#
# CAP=8G (or any size cgroup v1 takes) runs both engines inside a fresh cgroup v1 memory group
# whose memory.limit_in_bytes is CAP (page cache included; needs root and
# /sys/fs/cgroup/memory), after dropping the page cache (pages another group read in first would
# not count against the cap): stormo with its default expert budget (auto: what the cap leaves),
# and llama.cpp with its mmap load mode (its way to run a model larger than RAM) through
# llama-batched-bench with --no-repack: llama-bench always repacks MXFP4 and Q4_0 experts into
# anonymous memory (9.7 GiB for gpt-oss-20b), which a cap smaller than that kills. The group's
# peak usage and failcnt are printed after each run.
# PROMPT_TOKENS and GEN_TOKENS (64 and 32) set both engines' prefill and decode lengths (a capped
# llama.cpp re-reads its pages from disk on every token, so a shorter run keeps it in minutes).
# stormo decodes after its prompt (at a context of PROMPT_TOKENS), llama-bench's tg test from an
# empty context. DEPTH=N races decode at a context of N tokens: both engines prefill N tokens from
# empty (llama-bench -p N), then stormo decodes after them and llama.cpp runs its tg test at depth
# N (llama-bench -p 0 -n GEN_TOKENS -d N, a second run whose peak RSS is not used). Not with CAP.
set -euo pipefail

if [ $# -lt 4 ]; then
    sed -n '2,38p' "$0" >&2
    exit 2
fi
STORMO=$1 LLAMA=$2 MODEL=$3 GGUF=$4 THREADS=${5:-2} REPEATS=${6:-3}
PP=${PROMPT_TOKENS:-64} TG=${GEN_TOKENS:-32} DEPTH=${DEPTH:-0}
if ! [[ "$DEPTH" =~ ^[0-9]+$ ]]; then
    echo "race: DEPTH must be a whole number of tokens, not '$DEPTH'" >&2
    exit 2
fi
if [ "$DEPTH" -gt 0 ]; then
    PP=$DEPTH
fi
OUT=$(mktemp -d)
CAP=${CAP:-}
if [ "$DEPTH" -gt 0 ] && [ -n "$CAP" ]; then
    echo "race: DEPTH and CAP do not go together (a capped llama.cpp runs llama-batched-bench, which has no depth)" >&2
    exit 2
fi
GROUP=/sys/fs/cgroup/memory/stormo-race-$$
RACE_NAME=race
. "$(dirname "$0")/race-common.sh"
KEEP=${KEEP:-}
cleanup() {
    if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && cp -a "$OUT"/. "$KEEP"/; fi
    rm -rf "$OUT"
    if [ -n "$CAP" ] && [ -d "$GROUP" ]; then rmdir "$GROUP" || true; fi
}
trap cleanup EXIT

exec 3>&2  # the group's figures reach the terminal while each run's stderr goes to its file
make_cap_group

# Every run starts with an empty page cache (race-common.sh says why).
# Runs "$@" (inside the capped group when CAP is set) with its peak RSS written to $1.rss.
measured() {
    local name=$1
    shift
    drop_page_cache
    if [ -n "$CAP" ]; then
        reset_cap_group
        sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$GROUP" /usr/bin/time -f "%M" -o "$OUT/$name.rss" "$@"
        echo "race: $name: cgroup peak usage $(cat "$GROUP/memory.max_usage_in_bytes") bytes, failcnt $(cat "$GROUP/memory.failcnt")" >&3
    else
        /usr/bin/time -f "%M" -o "$OUT/$name.rss" "$@"
    fi
}

# The RAM read probe of `stormo bench` (the same loop, buffer and threads), alone: run right before
# and right after each llama.cpp run, so that llama.cpp's decode, in GB/s at the bytes a token of
# its GGUF reads, stands beside a bound measured minutes apart at most. This is the check that the
# probe is a bound: no engine may move more than it.
probe() {
    drop_page_cache
    "$STORMO" bench-kernels --ram-only --threads-list "$THREADS" --ram-probe 1GiB --json > "$OUT/$1.json" 2> "$OUT/$1.err" \
        || { echo "race: the RAM probe failed ($STORMO bench-kernels --ram-only):" >&2; cat "$OUT/$1.err" >&2; exit 1; }
}
# Bytes a llama.cpp decode token reads from its GGUF: every dense tensor but the embedding (one
# row of it a token), and top_k of n_experts of the routed experts.
"$STORMO" inspect --model "$GGUF" --json > "$OUT/gguf-inspect.json" 2> "$OUT/gguf-inspect.err" \
    || { echo "race: $STORMO inspect cannot read $GGUF:" >&2; cat "$OUT/gguf-inspect.err" >&2; exit 1; }

for r in $(seq 1 "$REPEATS"); do
    echo "race: round $r of $REPEATS" >&2
    probe "probe-before.$r"
    if [ -n "$CAP" ]; then
        measured "llama.$r" "$LLAMA/llama-batched-bench" -m "$GGUF" -c $((PP + TG + 16)) -b "$PP" -ub "$PP" -npp "$PP" \
            -ntg "$TG" -npl 1 -t "$THREADS" -nr --output-format jsonl > "$OUT/llama.$r.json" 2> "$OUT/llama.$r.err"
    else
        if [ "$DEPTH" -gt 0 ]; then
            measured "llama.$r" "$LLAMA/llama-bench" -m "$GGUF" -p "$PP" -n 0 -t "$THREADS" -r 1 -lm none -o json \
                > "$OUT/llama.$r.json" 2> "$OUT/llama.$r.err"
            measured "llamad.$r" "$LLAMA/llama-bench" -m "$GGUF" -p 0 -n "$TG" -d "$DEPTH" -t "$THREADS" -r 1 -lm none \
                -o json > "$OUT/llamad.$r.json" 2> "$OUT/llamad.$r.err"
        else
            measured "llama.$r" "$LLAMA/llama-bench" -m "$GGUF" -p "$PP" -n "$TG" -t "$THREADS" -r 1 -lm none -o json \
                > "$OUT/llama.$r.json" 2> "$OUT/llama.$r.err"
        fi
    fi
    probe "probe-after.$r"
    # No probe after the decode: its buffer would count in the process's peak RSS, which this
    # script sets beside llama.cpp's (the 64 MiB paired probe's buffer still does).
    measured "f32.$r" "$STORMO" bench --model "$MODEL" --prompt-tokens "$PP" --gen-tokens "$TG" --threads "$THREADS" \
        --ram-probe-after 0 --json > "$OUT/f32.$r.json" 2> "$OUT/f32.$r.err"
    measured "int8.$r" "$STORMO" bench --model "$MODEL" --prompt-tokens "$PP" --gen-tokens "$TG" --threads "$THREADS" \
        --ram-probe-after 0 --activations int8 --json > "$OUT/int8.$r.json" 2> "$OUT/int8.$r.err"
done

LLAMA_LABEL=${LLAMA_LABEL:-} CAP=$CAP DEPTH=$DEPTH /usr/bin/env python3 - "$OUT" "$REPEATS" <<'PY'
import json, os, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
def load(name, r):
    text = open(f"{out}/{name}.{r}.json").read()
    if name == "llama" and text.lstrip().startswith("{"):  # llama-batched-bench's jsonl, one line
        b = json.loads(text.strip().splitlines()[-1])
        return [{"n_prompt": b["pp"], "avg_ts": b["speed_pp"]}, {"n_prompt": 0, "avg_ts": b["speed_tg"]}]
    tests = json.loads(text)
    if name == "llama" and os.path.exists(f"{out}/llamad.{r}.json"):  # DEPTH: the tg test at depth
        tests += json.loads(open(f"{out}/llamad.{r}.json").read())
    return tests
def rss(name, r): return int(open(f"{out}/{name}.{r}.rss").read().split()[-1]) * 1024  # /usr/bin/time's %M: KiB
med = statistics.median
llama_pp, llama_tg, llama_commit = [], [], ""
for r in range(1, repeats + 1):
    for t in load("llama", r):
        llama_commit = f"{t.get('build_number', '?')} ({t.get('build_commit', '?')})"
        (llama_pp if t["n_prompt"] > 0 else llama_tg).append(t["avg_ts"])
llama_rss = med(rss("llama", r) for r in range(1, repeats + 1))
rows, road_runs = {}, {}
for road in ("f32", "int8"):
    runs = road_runs[road] = [load(road, r) for r in range(1, repeats + 1)]
    rows[road] = {k: med(x[k] for x in runs) for k in ("prefill_tokens_per_s", "decode_tokens_per_s",
                  "memory_bound_tokens_per_s", "peak_rss_bytes")}
    rows[road]["bytes_per_token"] = med(x["bytes_touched_per_token"] for x in runs)
    rows[road]["head_bytes"] = med(x.get("head_bytes_read_per_token", 0) for x in runs)
    rows[road]["ram_gbs"] = med(x.get("ram_read_bytes_per_s", 0) for x in runs) / 1e9
    paired = [x["paired_bound_ratio"] for x in runs if x.get("paired_bound_ratio") is not None]
    rows[road]["paired"] = med(paired) if paired else None
    rows[road]["process_rss"] = med(rss(road, r) for r in range(1, repeats + 1))
lp, lt = med(llama_pp), med(llama_tg)
inspect = json.load(open(f"{out}/gguf-inspect.json"))
roles = inspect["tensors"]["by_role"]
llama_bytes = (sum(roles[k]["bytes"] for k in ("attention", "norm", "router", "dense_ffn", "head", "other"))
               + roles["experts"]["bytes"] * inspect["top_k"] / inspect["n_experts"])
def probe(name, r): return json.load(open(f"{out}/{name}.{r}.json"))["ram"][0]["bytes_per_s"]
# Per round (llama_tg holds one decode test a round): decode GB/s, probe before and after (GB/s),
# and the decode's share of the higher probe.
llama_rounds = []
for r, tg in enumerate(llama_tg, 1):
    g, b, a = tg * llama_bytes / 1e9, probe("probe-before", r) / 1e9, probe("probe-after", r) / 1e9
    llama_rounds.append((g, b, a, g / max(b, a)))
llama_share = med(share for *_, share in llama_rounds)
cap = os.environ.get("CAP")
depth = int(os.environ.get("DEPTH", "0"))
print(f"llama.cpp {os.environ.get('LLAMA_LABEL') or llama_commit}; medians of {repeats} interleaved runs"
      + (f"; both under a {cap} memory cap (cgroup v1)" if cap else "")
      + (f"; decode at a context of {depth} tokens (llama.cpp: tg at depth {depth})" if depth > 0 else ""))
print("| engine | prefill tok/s | decode tok/s | prefill vs llama.cpp | decode vs llama.cpp | decode / memory bound | peak RSS GiB |")
print("|---|---|---|---|---|---|---|")
print(f"| llama.cpp | {lp:.2f} | {lt:.2f} | 1.00 | 1.00 | {llama_share:.2f} | {llama_rss / 2**30:.2f} |")
for road, name in (("f32", "stormo, float road (exact)"), ("int8", "stormo, int8 road")):
    r = rows[road]
    print(f"| {name} | {r['prefill_tokens_per_s']:.2f} | {r['decode_tokens_per_s']:.2f} | "
          f"{r['prefill_tokens_per_s'] / lp:.2f}x | {r['decode_tokens_per_s'] / lt:.2f}x | "
          f"{r['decode_tokens_per_s'] / r['memory_bound_tokens_per_s']:.2f} | {r['process_rss'] / 2**30:.2f} |")
print("per round, prefill / decode tok/s:")
for r in range(1, repeats + 1):
    line = [f"llama.cpp " + " / ".join(f"{t['avg_ts']:.2f}" for t in load("llama", r))]
    for road in ("f32", "int8"):
        x = load(road, r)
        line.append(f"{road} {x['prefill_tokens_per_s']:.2f} / {x['decode_tokens_per_s']:.2f} "
                    f"(decode step: attention {1e3 * x['decode_step_attention_seconds']:.0f} ms, "
                    f"experts {1e3 * x['decode_step_ffn_seconds']:.0f} ms, head {1e3 * x['decode_step_head_seconds']:.0f} ms)")
    print(f"  round {r}: " + "; ".join(line))
# The same ratios round by round: a round runs the three engines minutes apart, so its ratio
# compares them in one spell of this machine's memory, which the medians above do not.
if len(llama_pp) == repeats and len(llama_tg) == repeats:
  print("round by round, stormo / llama.cpp (each round's own ratio; median and range):")
  for road in ("f32", "int8"):
    for i, what in ((0, "prefill"), (1, "decode")):
      key = ("prefill_tokens_per_s", "decode_tokens_per_s")[i]
      ratios = [run[key] / (llama_pp, llama_tg)[i][r] for r, run in enumerate(road_runs[road])]
      print(f"  {road} {what}: " + ", ".join(f"{x:.2f}" for x in ratios)
            + f"; median {med(ratios):.2f}x, {min(ratios):.2f}-{max(ratios):.2f}")
print(f"llama.cpp: {llama_bytes / 1e9:.3f} GB read per token (its GGUF: every dense tensor but the embedding, "
      f"{inspect['top_k']} of {inspect['n_experts']} experts); decode moved / RAM probe before and after its run, GB/s:")
for r, (g, b, a, share) in enumerate(llama_rounds, 1):
    print(f"  round {r}: {g:.1f} / {b:.1f} and {a:.1f} ({share:.2f} of the higher)")
worst = max(share for *_, share in llama_rounds)
print(f"llama.cpp's decode against the probe: {worst:.2f} at most"
      + (" -- MORE than the probe: the probe is not a bound" if worst > 1.0 else " (the probe held as a bound)"))
for road in ("f32", "int8"):
    r = rows[road]
    print(f"{road}: {r['bytes_per_token'] / 1e9:.3f} GB read per token (head {r['head_bytes'] / 1e9:.3f} GB), "
          f"RAM probe {r['ram_gbs']:.1f} GB/s, memory bound {r['memory_bound_tokens_per_s']:.2f} tok/s"
          + (f", each step against the probe pass after it {r['paired']:.2f} (median)" if r["paired"] is not None else ""))
PY
