#!/usr/bin/env python3
"""What reading ahead a restored session's experts saves: misses of the first steps after a LOAD.

For every problem of a task in a demo's reference/eval.json, `stormo pipe` (with a streaming
expert budget) runs the prompt and the first tokens of the answer and SAVEs the session; then two
fresh processes LOAD it and decode the rest of the answer, one from the file as saved (format 2:
the experts the last step routed to are read ahead into the cold store) and one from a copy
rewritten as format 1 (no experts: nothing read ahead), in alternating order. Each process's
--stats gives the store's hits and misses; printed: the sums and miss rates of both sides, and
whether both decoded the same tokens (they must: the read-ahead changes where bytes are, never
a bit).

    scripts/bench-read-ahead.py --model models/qwen3-moe-demo --budget 1MiB --task copy
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

MAGIC_BYTES, PREAMBLE = 16, 16 + 4 + 4 + 8


def xxh3_64(data):
    """XXH3-64 of `data` through libxxhash (Debian: libxxhash0), the checksum stormo's files use."""
    import ctypes
    lib = ctypes.CDLL("libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib.XXH3_64bits(data, len(data))


def without_experts(data):
    """The session file `data` (format 2) as format 1: its header without the expert lists."""
    fmt = struct.unpack_from("<I", data, MAGIC_BYTES)[0]
    if fmt != 2:
        sys.exit(f"bench-read-ahead: a session file of format {fmt}, expected 2")
    header_len = struct.unpack_from("<Q", data, MAGIC_BYTES + 8)[0]
    header = data[PREAMBLE:PREAMBLE + header_len]
    at = 0

    def u64():
        nonlocal at
        v = struct.unpack_from("<Q", header, at)[0]
        at += 8
        return v

    def text():
        nonlocal at
        n = u64()
        at += n

    for _ in range(5):  # model, config, engine, kernels, layout
        text()
    for _ in range(4):  # position, written_end, needs_replay, page_floats
        u64()
    for _ in range(u64()):  # ring sizes
        u64()
    text()  # the caller's record
    old_header = header[:at]
    preamble = bytearray(data[:PREAMBLE])
    struct.pack_into("<I", preamble, MAGIC_BYTES, 1)
    struct.pack_into("<Q", preamble, MAGIC_BYTES + 8, len(old_header))
    checksum = struct.pack("<Q", xxh3_64(bytes(old_header)))
    return bytes(preamble) + old_header + checksum + data[PREAMBLE + header_len + 8:]


def pipe(args, lines, stats):
    cmd = [args.stormo, "pipe", "--model", args.model, "--expert-budget", args.budget, "--threads", str(args.threads),
           "--stats", stats]
    out = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True)
    if out.returncode != 0 or any(l.startswith("ERROR") for l in out.stdout.splitlines()):
        sys.exit(f"bench-read-ahead: {' '.join(cmd)} failed: {out.stdout.strip()} {out.stderr.strip()}")
    with open(stats) as f:
        return out.stdout.splitlines(), json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stormo", default="build/bin/stormo")
    ap.add_argument("--model", required=True, help="a demo directory with reference/eval.json")
    ap.add_argument("--budget", default="1MiB", help="--expert-budget: small enough that the experts stream")
    ap.add_argument("--task", default="copy")
    ap.add_argument("--first-tokens", type=int, default=3, help="answer tokens generated before the SAVE")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    with open(os.path.join(args.model, "reference", "eval.json")) as f:
        problems = [p for p in json.load(f)["problems"] if p["task"] == args.task]
    if not problems:
        sys.exit(f"bench-read-ahead: no problem of task {args.task} in {args.model}")
    totals = {"read ahead": [0, 0, 0], "none": [0, 0, 0]}
    slots, differ = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        saved, old, stats = (os.path.join(tmp, n) for n in ("s2.session", "s1.session", "stats.json"))
        for i, p in enumerate(problems):
            ids = p["prompt_ids"]
            out, _ = pipe(args, [f"TURN {args.first_tokens} 0 0 1 0 {len(ids)} " + " ".join(map(str, ids)), f"SAVE {saved}"], stats)
            last = [int(l.split()[1]) for l in out if l.startswith("TOKEN")][-1]
            pos = int([l for l in out if l.startswith("DONE")][0].split()[3])
            with open(saved, "rb") as f, open(old, "wb") as g:
                g.write(without_experts(f.read()))
            tokens = {}
            for side in (["read ahead", "none"] if i % 2 == 0 else ["none", "read ahead"]):
                path = saved if side == "read ahead" else old
                out, st = pipe(args, [f"LOAD {path}", f"TURN 64 {pos} 0 1 0 1 {last}"], stats)
                tokens[side] = [l for l in out if l.startswith("TOKEN")]
                totals[side][0] += st["expert_hits"]
                totals[side][1] += st["expert_misses"]
                totals[side][2] += st["prefetch_issued"]
                slots = st["expert_slots"]
            differ += tokens["read ahead"] != tokens["none"]
    print(f"model {args.model}, task {args.task}: {len(problems)} problems, --expert-budget {args.budget} ({slots} slots), "
          f"LOAD after {args.first_tokens} answer tokens, then the rest of the answer")
    for side, (hits, misses, issued) in totals.items():
        print(f"{side:10s}  hits {hits:5d}  misses {misses:5d}  miss rate {misses / max(1, hits + misses):.3f}  prefetches issued {issued}")
    ra, none = totals["read ahead"][1], totals["none"][1]
    print(f"misses read ahead / none: {ra / none:.3f}" if none else "no misses without read-ahead")
    print(f"same tokens: {'yes' if differ == 0 else f'NO ({differ} problems differ)'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
