#!/usr/bin/env python3
"""Writes the seeds of the tokenizer_json fuzz harness (tests/fuzz/seeds/tokenizer_json): the real
tokenizer.json files of the references (gpt-oss's o200k_harmony, Qwen3's), cut to a few hundred
tokens so they fit libFuzzer's 64 KiB inputs. Everything but the vocabulary, the merges and the
added tokens' ids is kept as the file has it (normalizer, split regexes, ByteLevel steps, decoder,
post-processor, flags): the 256 byte tokens, then the first merges whose parts are kept, renumbered
densely, then the added tokens. Run outside CI; docs/fuzzing.md.

usage: python3 scripts/make-tokenizer-fuzz-seeds.py TOKENIZERS_DIR [OUT_DIR]
  TOKENIZERS_DIR: build/test-data/tokenizers (unpacked from tests/data/tokenizers.tar.xz)
"""
import json, sys
from pathlib import Path

src = Path(sys.argv[1])
out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent.parent / "tests/fuzz/seeds/tokenizer_json"
out.mkdir(parents=True, exist_ok=True)
MERGES = 300

for name in ("gpt-oss", "qwen3"):
    t = json.loads((src / name / "tokenizer.json").read_text(encoding="utf-8"))
    model = t["model"]
    by_id = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    kept = [token for token, _ in by_id[:256]]  # the byte-level alphabet comes first in both
    known = set(kept)
    merges = []
    for merge in model["merges"]:
        a, b = merge if isinstance(merge, list) else merge.split(" ", 1)
        if a in known and b in known and a + b in model["vocab"] and a + b not in known:
            merges.append(merge)
            kept.append(a + b)
            known.add(a + b)
            if len(merges) == MERGES:
                break
    model["vocab"] = {token: i for i, token in enumerate(kept)}
    model["merges"] = merges
    for k, added in enumerate(t["added_tokens"]):
        added["id"] = len(kept) + k
    text = json.dumps(t, ensure_ascii=False, separators=(",", ":"))
    (out / f"{name}-cut.json").write_text(text, encoding="utf-8")
    print(name, len(text.encode()), "bytes")
