"""Running the MTP layer as a drafter along the main model's greedy path, and measuring how often
its drafts are what the main model then says.

Draft convention (what a speculative decoder does): the committed tokens are s_0..s_n, s_n the
main model's latest token (from the logits of row n-1, whose hidden state is h_{n-1}). Draft 1 is
argmax MTP(h_{n-1}, s_n), a guess at s_{n+1}. A chained draft k+1 reuses the one MTP layer at the
next position with the previous draft step's output carried as its hidden input and the previous
draft as its token; the layer's attention sees its own rows of the committed positions and the
draft rows before it. What is carried follows the inference engines: GLM's NextN carries the
output after shared_head.norm, DeepSeek-V3 the raw output (vLLM's deepseek_mtp.py, PR 46075).
The verify step runs the main model over [s_n, d_1..d_k]; the longest prefix of drafts equal to
the main model's own greedy tokens is accepted, plus the main model's next token: 1 + accepted
tokens per verify.
"""
import torch

from .data import END, encode


def carry(cfg, layer, g):
    return layer.shared_head.norm(g) if cfg.glm else g


def mtp_rows(main, layer, ids, hidden=None, trace=None):
    """Teacher-forced MTP over a sequence: row i reads (h_i, ids[i+1]) for i = 0..T-2.
    Returns (logits [B, T-1, V] predicting ids[i+2], g [B, T-1, H], h [B, T, H])."""
    if hidden is None:
        _, hidden = main(ids)
    T = ids.shape[1]
    g = layer.step(hidden[:, :T - 1], ids[:, 1:], main.model.embed_tokens, main.rope, torch.arange(T - 1), trace)
    return layer.logits(g, main.lm_head), g, hidden


def greedy(main, prompt, max_new=12):
    """The main model's greedy continuation (stops after <|end|>), recomputed without a cache."""
    ids = list(prompt)
    for _ in range(max_new):
        logits, _ = main(torch.tensor([ids]))
        ids.append(int(logits[0, -1].argmax()))
        if ids[-1] == END:
            break
    return ids


def chained_draft(main, layer, cfg, seq, hidden, g_rows, row, first_draft, depth):
    """Drafts 2..depth after `first_draft` (the draft of seq[row + 2] made at MTP row `row`)."""
    drafts = [first_draft]
    h_rows = hidden[:, :row + 1]
    tokens = list(seq[1:row + 2])
    prev_g = g_rows[:, row:row + 1]
    for _ in range(depth - 1):
        h_rows = torch.cat([h_rows, carry(cfg, layer, prev_g)], dim=1)
        tokens.append(drafts[-1])
        T = h_rows.shape[1]
        g = layer.step(h_rows, torch.tensor([tokens]), main.model.embed_tokens, main.rope, torch.arange(T))
        prev_g = g[:, -1:]
        drafts.append(int(layer.logits(prev_g, main.lm_head)[0, -1].argmax()))
    return drafts


def acceptance(main, layer, cfg, problems, depth=2):
    """Draft acceptance along the main model's greedy answers to `problems` ((task, prompt, answer)).

    rate[k]: over the positions where a k-th draft is checked (draft k-1 accepted, the answer not
    yet ended), the share equal to the main model's token. tokens_per_verify[k]: a decode walk with
    drafts of length k (k = 0 is plain decoding, 1.0), the generated tokens after the first
    divided by the verify steps."""
    hits = [0] * (depth + 1)
    tries = [0] * (depth + 1)
    walk_tokens = [0] * (depth + 1)
    walk_steps = [0] * (depth + 1)
    by_task = {}
    with torch.no_grad():
        for task, prompt, _ in problems:
            task_hits = by_task.setdefault(task, [0, 0])
            p = encode(prompt)
            seq = greedy(main, p)
            ids = torch.tensor([seq])
            logits, g, hidden = mtp_rows(main, layer, ids)
            last = len(seq) - 1
            # drafts[n] = the chain made when s_n (n >= len(p)) has just been committed.
            drafts = {}
            for n in range(len(p), last):
                first = int(logits[0, n - 1].argmax())
                drafts[n] = chained_draft(main, layer, cfg, seq, hidden, g, n - 1, first, depth)
                for k, d in enumerate(drafts[n], start=1):
                    if n + k > last:
                        break
                    tries[k] += 1
                    task_hits[1] += k == 1
                    if d != seq[n + k]:
                        break
                    hits[k] += 1
                    task_hits[0] += k == 1
            for k in range(depth + 1):
                n, steps = len(p), 0
                while n < last:
                    accepted = 0
                    for j, d in enumerate(drafts[n][:k], start=1):
                        if n + j > last or d != seq[n + j]:
                            break
                        accepted += 1
                    n += accepted + 1
                    steps += 1
                walk_tokens[k] += last - len(p)
                walk_steps[k] += steps
    return {
        "problems": len(problems),
        "positions": tries[1],
        "rate": {k: hits[k] / tries[k] for k in range(1, depth + 1) if tries[k]},
        "checked": {k: tries[k] for k in range(1, depth + 1)},
        "rate1_by_task": {t: h / n for t, (h, n) in by_task.items() if n},
        "tokens_per_verify": {k: walk_tokens[k] / walk_steps[k] for k in range(depth + 1) if walk_steps[k]},
    }


def describe(stats):
    rates = ", ".join(f"draft {k}: {100 * r:.1f}% of {stats['checked'][k]}" for k, r in stats["rate"].items())
    walk = ", ".join(f"k={k}: {t:.3f}" for k, t in stats["tokens_per_verify"].items())
    tasks = ", ".join(f"{t} {100 * r:.1f}%" for t, r in stats["rate1_by_task"].items())
    return f"{stats['problems']} problems; acceptance {rates}; tokens per verify {walk}; draft 1 by task: {tasks}"


__all__ = ["acceptance", "carry", "chained_draft", "describe", "greedy", "mtp_rows"]
