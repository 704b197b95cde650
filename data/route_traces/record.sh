#!/usr/bin/env bash
# Records the example route traces of the trained demo models: each of the 200 problems of a demo's
# eval set (reference/eval.json) generated greedily as the eval does (its prompt ids, up to 12 new
# tokens, stopping at <|end|>), one run after another into one version 2 trace per demo. The expert
# budget is below the experts' total so the store streams and the prefetcher's predictions are
# recorded with the routes.
#
#   data/route_traces/record.sh [path/to/stormo]    (from the repository's root)
set -euo pipefail
stormo=${1:-build/bin/stormo}
out=data/route_traces
for demo in gpt-oss-demo qwen3-moe-demo deepseek-v3-demo glm-moe-dsa-demo; do
    trace=$out/$demo.trace
    rm -f "$trace"
    python3 -c 'import json,sys
for p in json.load(open(sys.argv[1]))["problems"]: print(",".join(map(str, p["prompt_ids"])))' \
        "models/$demo/reference/eval.json" |
    while read -r ids; do
        "$stormo" generate --model "models/$demo" --ids "$ids" --max-tokens 12 --expert-budget 1MiB \
            --route-trace "$trace" > /dev/null
    done
    echo "$trace: $(grep -vc '^#' "$trace") steps"
done
