"""Training one MTP layer on a frozen demo model.

Initialisation: the decoder part is a copy of the main model's last layer (attention, indexer,
router with its correction bias, experts, shared expert, both norms); enorm and hnorm are ones;
eh_proj passes hnorm(h) through (identity on the hidden half, small random weights on the
embedding half), so the layer starts as "the last layer once more"; shared_head.norm is a copy of
model.norm. The embedding and the head are the main model's own, frozen.

Loss: cross-entropy of row i's logits against token i+2 where that token is an answer token or
<|end|> (the positions a drafter is asked about while answering), the ground truth of the packed
rows; for GLM, plus the indexer's KL to the head-summed attention (as the demo's indexers were
trained). The router's e_score_correction_bias follows the aux-loss-free rule the demos used.
"""
import copy
import math
import random
import time

import torch
import torch.nn.functional as F

from . import data
from .drafting import acceptance, describe, mtp_rows
from .model import MtpLayer


def init_mtp(cfg, main, seed):
    torch.manual_seed(seed)
    layer = MtpLayer(cfg)
    last = main.model.layers[-1]
    if not cfg.moe[-1]:
        raise SystemExit("the main model's last layer is dense; the MTP layer is an MoE layer to copy from")
    for part in ("input_layernorm", "self_attn", "post_attention_layernorm", "mlp"):
        getattr(layer, part).load_state_dict(copy.deepcopy(getattr(last, part).state_dict()))
    with torch.no_grad():
        H = cfg.hidden
        layer.eh_proj.weight.zero_()
        layer.eh_proj.weight[:, :H].normal_(0.0, 0.02)
        layer.eh_proj.weight[:, H:] = torch.eye(H)
        layer.shared_head.norm.weight.copy_(main.model.norm.weight)
    for p in layer.parameters():
        p.requires_grad_(True)
    return layer


def indexer_kl(trace):
    """KL(head-summed attention, detached || softmax of the indexer's scores) over causal positions."""
    target = trace["probs"].detach().sum(1)
    target = target / target.sum(-1, keepdim=True)
    scores = trace["index_scores"].masked_fill(~trace["causal"], float("-inf"))
    log_q = torch.log_softmax(scores, dim=-1)
    keep = target > 0
    return (target[keep] * (target[keep].log() - log_q[keep])).sum() / target.shape[0] / target.shape[1]


def train(main, cfg, eval_json, out_log, steps, lr, warmup, batch_rows, seed, mix, max_minutes, val_every,
          bias_rate, val_problems, kl_weight=1.0):
    rng = random.Random(seed)
    layer = init_mtp(cfg, main, seed)
    layer.train()
    excluded = data.excluded_prompts(eval_json)
    mix = data.tasks.parse_mix(mix)
    decay = [p for p in layer.parameters() if p.dim() >= 2]
    no_decay = [p for p in layer.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.98))
    layer.mlp.loads = torch.zeros(cfg.experts)
    start = time.time()

    def lr_at(step):
        if step < warmup:
            return lr * (step + 1) / warmup
        t = min(1.0, max((step - warmup) / max(1, steps - warmup), (time.time() - start) / (max_minutes * 60)))
        return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    def log(line):
        print(line, flush=True)
        out_log.write(line + "\n")
        out_log.flush()

    best = (-1.0, 0, copy.deepcopy(layer.state_dict()))
    step = 0
    while step < steps and time.time() - start < max_minutes * 60 - 10:
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        ids, targets = data.batch(torch, rng, batch_rows, excluded, mix)
        with torch.no_grad():
            _, hidden = main(ids)
        trace = {} if cfg.glm else None
        layer.mlp.loads.zero_()
        logits, _, _ = mtp_rows(main, layer, ids, hidden, trace)
        want = targets[:, 2:]
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, cfg.vocab), want.reshape(-1), ignore_index=-100)
        total = loss + (kl_weight * indexer_kl(trace) if cfg.glm else 0.0)
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(layer.parameters(), 1.0)
        opt.step()
        with torch.no_grad():
            load = layer.mlp.loads
            layer.mlp.gate.e_score_correction_bias += bias_rate * torch.sign(load.mean() - load)
        step += 1
        if step % 25 == 0:
            extra = f" kl {(total - loss).item():.4f}" if cfg.glm else ""
            log(f"step {step} loss {loss.item():.4f}{extra} lr {lr_at(step):.2e} t {time.time() - start:.0f}s")
        if step % val_every == 0:
            best = validate(main, layer, cfg, val_problems, step, best, log)
    if step % val_every != 0:
        best = validate(main, layer, cfg, val_problems, step, best, log)
    layer.mlp.loads = None
    layer.load_state_dict(best[2])
    layer.eval()
    return layer, {"steps_done": step, "best_step": best[1], "best_val_rate1": best[0],
                   "train_seconds": round(time.time() - start, 1)}


def validate(main, layer, cfg, problems, step, best, log):
    layer.eval()
    loads, layer.mlp.loads = layer.mlp.loads, None
    stats = acceptance(main, layer, cfg, problems, depth=1)
    layer.mlp.loads = loads
    layer.train()
    log(f"val step {step}: {describe(stats)}")
    if stats["rate"][1] >= best[0]:
        return stats["rate"][1], step, copy.deepcopy(layer.state_dict())
    return best


__all__ = ["init_mtp", "train"]
