#!/usr/bin/env bash
# Many users at once, stormo serve against llama-server, on the same GGUF file, in the same run:
# for each N of the list, `stormo serve --parallel N` and `llama-server -np N` in turn (stormo N,
# llama-server N, then the next N), each fresh, each driven by scripts/serve-streams.mjs with N
# concurrent streams of the same prompts; then one table of both engines' figures.
#
#   scripts/race-serve.sh STORMO LLAMA_BIN_DIR MODEL.gguf ["1 2 4 8"]
#
# STORMO: the stormo binary; LLAMA_BIN_DIR: a llama.cpp build's bin/ (llama-server and its
# libraries: LD_LIBRARY_PATH is set to it); MODEL.gguf: what both serve (STORMO_MODEL=PATH gives
# stormo another copy of the same weights instead, e.g. the safetensors directory it came from).
# The N list defaults to "1 2 4 8".
#
# Each run: the page cache dropped (when root), the server started, /health waited for (at most
# HEALTH_TIMEOUT seconds, 1800), one unmeasured warm-up request (2 tokens of its own prompt), then
# N streams at once, each a streamed /v1/completions of its own numeric prompt of about
# PROMPT_TOKENS tokens (64) asking for exactly GEN_TOKENS tokens (32; ignore_eos, temperature 0);
# the server is stopped (SIGTERM) before the next starts. The prompts' length in words is found
# once, with the first stormo server's /tokenize, and then given to every run, so both engines
# get byte for byte the same prompts at each N.
#   stormo serve --model MODEL --port PORT --threads THREADS --ctx CTX --parallel N
#   llama-server -m MODEL.gguf --port PORT+1 -np N -c N*CTX -t THREADS -cb -lm none
# THREADS defaults to 2. CTX is one sequence's context (default PROMPT_TOKENS + GEN_TOKENS + 64,
# rounded up to 256): llama-server's -c is shared by its slots (each gets c / np), so it gets N
# times it. llama-server reads the model into RAM (-lm none, the fastest of its modes that holds
# this file in 23 GiB; llama.cpp's default mmap with repacking needs the file twice); continuous
# batching (-cb) is its default, written out. A stormo whose `serve --help` has no --parallel yet
# gets none, and its N streams queue one behind another (said on stderr and in the table). CTX is
# given to stormo's --ctx as one sequence's context.
#
# CAP=8G (or any size cgroup v1 takes) runs each server inside a fresh cgroup v1 memory group whose
# memory.limit_in_bytes is CAP (page cache included; needs root and /sys/fs/cgroup/memory), the
# page cache dropped before each start: stormo with its default expert budget (what the cap
# leaves), llama-server with mmap and no repacking (-lm mmap --no-repack; repacking copies the MXFP4
# and Q4_0 experts into anonymous memory, 9.7 GiB for gpt-oss-20b, which an 8 GiB cap kills).
# The group's peak usage and failcnt are printed after each run.
#
# The figures (scripts/serve-streams.mjs defines them): aggregate decode tok/s (every token after
# each stream's first, over the time from the first stream's first token to the last stream's
# last), decode tok/s while all N streams decode (after the last first token, until the first last
# token), end-to-end tok/s, each with its ratio stormo / llama-server, time to first token (mean
# and max), the worst request's
# latency over N times the engine's own latency at N=1 (the issue's aim: at most 1), and for stormo
# the expert bytes read from disk per generated token (its /metrics, prefill included) and their
# ratio to N=1. EXPERT_METRIC=NAME takes that column from another `*_total` counter of stormo's
# /metrics instead (per generated token). REPEATS=R runs the whole list R times, interleaved
# (medians reported). KEEP=DIR keeps every run's JSON and server log. PORT (18480) is stormo's
# port, PORT+1 llama-server's. LLAMA_LABEL names the llama.cpp source in the output.
set -euo pipefail

if [ $# -lt 3 ]; then
    sed -n '2,48p' "$0" >&2
    exit 2
fi
STORMO=$1 LLAMA=$2 GGUF=$3 NS=${4:-"1 2 4 8"}
STORMO_MODEL=${STORMO_MODEL:-$GGUF}
PP=${PROMPT_TOKENS:-64} TG=${GEN_TOKENS:-32} THREADS=${THREADS:-2} REPEATS=${REPEATS:-1}
CTX=${CTX:-$(( (PP + TG + 64 + 255) / 256 * 256 ))}
PORT=${PORT:-18480} HEALTH_TIMEOUT=${HEALTH_TIMEOUT:-1800}
CAP=${CAP:-} KEEP=${KEEP:-}
HERE=$(cd "$(dirname "$0")" && pwd)
for v in PP TG THREADS REPEATS CTX PORT HEALTH_TIMEOUT; do
    if ! [[ "${!v}" =~ ^[1-9][0-9]*$ ]]; then
        echo "race-serve: $v must be a positive whole number, not '${!v}'" >&2
        exit 2
    fi
done
for n in $NS; do
    if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
        echo "race-serve: the N list holds '$n', not a positive whole number" >&2
        exit 2
    fi
done
[ -x "$STORMO" ] || { echo "race-serve: $STORMO is not an executable" >&2; exit 2; }
[ -x "$LLAMA/llama-server" ] || { echo "race-serve: $LLAMA/llama-server is not an executable" >&2; exit 2; }
[ -e "$GGUF" ] || { echo "race-serve: $GGUF does not exist" >&2; exit 2; }
command -v node > /dev/null || { echo "race-serve: node is needed (scripts/serve-streams.mjs)" >&2; exit 2; }

HAS_PARALLEL=""
# grep reads all of the help: with pipefail, an early exit of grep -q would fail the pipe on SIGPIPE.
if "$STORMO" serve --help 2>&1 | grep -- '--parallel' > /dev/null; then HAS_PARALLEL=1; fi

OUT=$(mktemp -d)
GROUP=/sys/fs/cgroup/memory/stormo-race-serve-$$
RACE_NAME=race-serve
. "$(dirname "$0")/race-common.sh"
end_race_on_exit

make_cap_group

WORDS=""
load() {
    local name=$1 port=$2 n=$3
    local words_arg=()
    if [ -n "$WORDS" ]; then words_arg=(--prompt-words "$WORDS"); fi
    node "$HERE/serve-streams.mjs" --url "http://127.0.0.1:$port" --streams "$n" --prompt-tokens "$PP" \
        --gen-tokens "$TG" --label "$name" --json "${words_arg[@]}" > "$OUT/$name.json" 2> "$OUT/$name.err" || {
        echo "race-serve: the load on $name failed:" >&2
        cat "$OUT/$name.err" >&2
        exit 1
    }
    if [ -z "$WORDS" ]; then
        WORDS=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).prompt_words)' "$OUT/$name.json")
        echo "race-serve: prompts of $WORDS words (about $PP tokens, from stormo's /tokenize)" >&2
    fi
}

finish_run() {
    local name=$1
    stop_server
    if [ -n "$CAP" ]; then
        echo "race-serve: $name: cgroup peak usage $(cat "$GROUP/memory.max_usage_in_bytes") bytes, failcnt $(cat "$GROUP/memory.failcnt")" >&2
        echo "$(cat "$GROUP/memory.max_usage_in_bytes") $(cat "$GROUP/memory.failcnt")" > "$OUT/$name.cgroup"
    fi
}

LLAMA_LOAD=(-lm none)
if [ -n "$CAP" ]; then LLAMA_LOAD=(-lm mmap --no-repack); fi
for r in $(seq 1 "$REPEATS"); do
    for n in $NS; do
        echo "race-serve: round $r of $REPEATS, $n stream(s): stormo" >&2
        # --parallel 1 too: its default may hold room for more sequences than the run has
        parallel=()
        if [ -n "$HAS_PARALLEL" ]; then
            parallel=(--parallel "$n")
        elif [ "$n" -gt 1 ]; then
            echo "race-serve: $STORMO serve has no --parallel: its $n streams queue one behind another" >&2
        fi
        start_server "stormo.$n.$r" "$STORMO" serve --model "$STORMO_MODEL" --port "$PORT" --threads "$THREADS" \
            --ctx "$CTX" "${parallel[@]}"
        wait_healthy "stormo.$n.$r" "$PORT"
        load "stormo.$n.$r" "$PORT" "$n"
        finish_run "stormo.$n.$r"

        echo "race-serve: round $r of $REPEATS, $n stream(s): llama-server" >&2
        start_server "llama.$n.$r" env LD_LIBRARY_PATH="$LLAMA${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            "$LLAMA/llama-server" -m "$GGUF" --port $((PORT + 1)) -np "$n" -c $((n * CTX)) -t "$THREADS" -cb \
            "${LLAMA_LOAD[@]}"
        wait_healthy "llama.$n.$r" $((PORT + 1))
        load "llama.$n.$r" $((PORT + 1)) "$n"
        finish_run "llama.$n.$r"
    done
done

HAS_PARALLEL=$HAS_PARALLEL CAP=$CAP LLAMA_LABEL=${LLAMA_LABEL:-} EXPERT_METRIC=${EXPERT_METRIC:-} \
    /usr/bin/env python3 - "$OUT" "$REPEATS" "$PP" "$TG" "$THREADS" "$CTX" $NS <<'PY'
import json, os, statistics, sys
out, repeats, pp, tg, threads, ctx = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:7])
ns = [int(n) for n in sys.argv[7:]]
metric = os.environ.get("EXPERT_METRIC") or ""
cap = os.environ.get("CAP")
med = statistics.median
def load(engine, n, r): return json.load(open(f"{out}/{engine}.{n}.{r}.json"))
def runs(engine, n): return [load(engine, n, r) for r in range(1, repeats + 1)]
def fig(engine, n, key): return med(x[key] for x in runs(engine, n))
# A figure some runs may lack (an older serve-streams.mjs, or no window with every stream decoding).
def fig_or_none(engine, n, key):
    values = [x.get(key) for x in runs(engine, n)]
    return None if any(v is None for v in values) else med(values)
def ratio_of(s, l): return f(s / l) + "x" if s and l else ""
def worst_latency(engine, n): return med(max(q["latency_ms"] for q in x["requests"]) for x in runs(engine, n))
def alone(engine): return fig(engine, 1, "latency_ms_mean") if 1 in ns else None
def expert_bytes(n):
    values = []
    for x in runs("stormo", n):
        m = x.get("metrics") or {}
        v = (m.get("per_token") or {}).get(metric) if metric else m.get("expert_bytes_read_per_token")
        if v is not None: values.append(v)
    return med(values) if values else None
def f(v, digits=2): return "n/a" if v is None else f"{v:.{digits}f}"

label = os.environ.get("LLAMA_LABEL") or "llama-server"
print(f"stormo serve against {label}, prompt ~{pp} tokens, {tg} generated per stream, {threads} threads, "
      f"context {ctx} per sequence; " + (f"medians of {repeats} interleaved rounds" if repeats > 1 else "one round")
      + (f"; both under a {cap} memory cap (cgroup v1)" if cap else "; in RAM"))
if not os.environ.get("HAS_PARALLEL") and max(ns) > 1:
    print("stormo serve had no --parallel: its streams were served one after another")
what = f"{metric} per token" if metric else "expert bytes read per token"
print(f"| N | engine | decode tok/s (aggregate) | stormo / llama | decode tok/s, all streams decoding | stormo / llama "
      f"| end-to-end tok/s | stormo / llama | TTFT mean ms | TTFT max ms | worst latency / (N x alone) | {what} | vs N=1 |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
base_bytes = expert_bytes(1) if 1 in ns else None
for n in ns:
    s, l = fig("stormo", n, "decode_tokens_per_s"), fig("llama", n, "decode_tokens_per_s")
    sa, la = fig_or_none("stormo", n, "all_decoding_tokens_per_s"), fig_or_none("llama", n, "all_decoding_tokens_per_s")
    se, le = fig("stormo", n, "generated_tokens_per_s"), fig("llama", n, "generated_tokens_per_s")
    for engine, tps, all_tps, e2e in (("stormo", s, sa, se), ("llama-server", l, la, le)):
        key = "stormo" if engine == "stormo" else "llama"
        a = alone(key)
        lat = f(worst_latency(key, n) / (n * a)) if a else "n/a"
        mine = engine == "stormo"
        ratio, all_ratio, e2e_ratio = (ratio_of(s, l), ratio_of(sa, la), ratio_of(se, le)) if mine else ("", "", "")
        if mine:
            b = expert_bytes(n)
            bytes_col = "n/a" if b is None else f"{b / 1e6:.1f} MB" if not metric else f"{b:.4g}"
            vs = f(b / base_bytes) if b is not None and base_bytes else "n/a"
        else:
            bytes_col, vs = "", ""
        print(f"| {n} | {engine} | {f(tps)} | {ratio} | {f(all_tps)} | {all_ratio} | {f(e2e)} | {e2e_ratio} | "
              f"{f(fig(key, n, 'ttft_ms_mean'), 1)} | "
              f"{f(fig(key, n, 'ttft_ms_max'), 1)} | {lat} | {bytes_col} | {vs} |")
print("each run (round, N, engine): decode tok/s; decode tok/s with all streams decoding (text chunks a token); "
      "end-to-end tok/s; each request's first token / latency in ms")
for r in range(1, repeats + 1):
    for n in ns:
        for key in ("stormo", "llama"):
            x = load(key, n, r)
            reqs = ", ".join(f"{q['ttft_ms']:.0f}/{q['latency_ms']:.0f}" for q in x["requests"])
            extra = ""
            m = x.get("metrics")
            if m:
                d = m.get("expert_bytes_read_per_decode_token")
                extra = f"; expert bytes read per decode token {'n/a' if d is None else f'{d / 1e6:.1f} MB'}"
                extra += "".join(f"; {k} {v:.4g}/token" for k, v in sorted(m["per_token"].items())
                                 if k != "stormo_expert_bytes_read_total" and v is not None)
            if x.get("final_parse_failures"):
                extra += f"; {x['final_parse_failures']} stream(s) failed by the server mid-answer, counted to their last text chunk"
            cg = f"{out}/{key}.{n}.{r}.cgroup"
            if os.path.exists(cg):
                peak, fails = open(cg).read().split()
                extra += f"; cgroup peak {int(peak) / 2**30:.2f} GiB, failcnt {fails}"
            steady = f"{x.get('all_decoding_tokens_per_s')} ({x.get('chunks_per_token')})"
            print(f"  {r}, {n}, {key}: {x['decode_tokens_per_s']}; {steady}; {x['generated_tokens_per_s']}; {reqs}{extra}")
PY
