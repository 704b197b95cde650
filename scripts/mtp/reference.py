"""The MTP reference a demo ships for the engine's MTP implementation, two small .npy files and a
JSON index in reference/, the form of the demos' other reference files:

  mtp_hidden.npy  float32 [n, T_max, hidden]  the main model's hidden rows h_i (after model.norm) the
                  MTP layer reads, teacher-forced over each sequence; rows t >= length are zero
  mtp_logits.npy  float32 [n, T_max, vocab]   MTP logits of row i = MTP(h_i, ids[i+1]), predicting
                  ids[i+2], for i = 0..length-2; rows t >= length-1 are zero
  mtp.json        the sequences (ids, length, source), the convention, the chained drafts of a few
                  rows (carried hidden, draft token, the next draft's logits), how it was made
"""
import json
import os

import numpy as np
import torch

from .drafting import carry, chained_draft, mtp_rows


def sequences(eval_json):
    """The sequences of reference/logits.npy (3 answered problems and a 40-token multi-turn context,
    longer than GLM's index_topk)."""
    with open(eval_json) as f:
        return json.load(f)["logits_npy"]["sequences"]


def main_logits_difference(ref, main, seqs):
    expected = np.load(os.path.join(ref, "logits.npy"))
    worst = 0.0
    with torch.no_grad():
        for j, s in enumerate(seqs):
            logits, _ = main(torch.tensor([s["ids"]]))
            worst = max(worst, float(np.abs(logits[0].numpy() - expected[j, :s["length"]]).max()))
    return worst


def write(demo, main, layer, cfg, command):
    ref = os.path.join(demo, "reference")
    seqs = sequences(os.path.join(ref, "eval.json"))
    T_max = max(s["length"] for s in seqs)
    hidden_out = np.zeros((len(seqs), T_max, cfg.hidden), dtype=np.float32)
    logits_out = np.zeros((len(seqs), T_max, cfg.vocab), dtype=np.float32)
    entries = []
    with torch.no_grad():
        for j, s in enumerate(seqs):
            ids = torch.tensor([s["ids"]])
            logits, g, hidden = mtp_rows(main, layer, ids)
            T = s["length"]
            hidden_out[j, :T] = hidden[0].numpy()
            logits_out[j, :T - 1] = logits[0].numpy()
            entry = {"source": s["source"], "ids": s["ids"], "length": T, "prompt_len": s["prompt_len"]}
            # One chained draft at the first answer row: the step-2 input and its logits.
            row = s["prompt_len"] - 1
            if row + 2 < T:
                first = s["ids"][row + 2]
                drafts = chained_draft(main, layer, cfg, s["ids"], hidden, g, row, first, 2)
                h2 = torch.cat([hidden[:, :row + 1], carry(cfg, layer, g[:, row:row + 1])], dim=1)
                toks = torch.tensor([s["ids"][1:row + 2] + [first]])
                g2 = layer.step(h2, toks, main.model.embed_tokens, main.rope, torch.arange(row + 2))
                entry["chain"] = {
                    "row": row, "draft_token": first,
                    "carried_hidden": carry(cfg, layer, g[:, row])[0].tolist(),
                    "logits": layer.logits(g2[:, -1], main.lm_head)[0].tolist(),
                    "argmax": drafts[1]}
            entries.append(entry)
    np.save(os.path.join(ref, "mtp_hidden.npy"), hidden_out)
    np.save(os.path.join(ref, "mtp_logits.npy"), logits_out)
    index = {
        "files": {
            "mtp_hidden.npy": f"float32 {list(hidden_out.shape)}: per sequence, the main model's hidden rows after "
                              "model.norm (what lm_head reads), teacher-forced; rows >= length are zero",
            "mtp_logits.npy": f"float32 {list(logits_out.shape)}: row i = MTP logits from (hidden row i, ids[i+1]), "
                              "predicting ids[i+2], i = 0..length-2; rows >= length-1 are zero",
        },
        "layer": f"model.layers.{cfg.layers}.* of model.safetensors (num_nextn_predict_layers 1)",
        "convention": "x_i = eh_proj([enorm(embed(ids[i+1])) ; hnorm(h_i)]) (embedding half first), "
                      "g_i = the decoder layer over the MTP's own rows 0..i (positions 0..i, RoPE as the main "
                      "layers" + (", the layer's own DSA indexer with index_topk" if cfg.glm else "") +
                      "), logits_i = lm_head(shared_head.norm(g_i)); embed and head are the main model's; "
                      "no row is masked (vLLM zeroes the embedding at position 0; this layer was trained without it)",
        "chain": "per sequence, one chained draft at row prompt_len-1: row prompt_len reads (carried_hidden, "
                 "draft_token) with carried_hidden = " +
                 ("shared_head.norm(g_row) (GLM's NextN)" if cfg.glm else "g_row, the raw layer output (DeepSeek-V3)") +
                 "; the MTP rows 0..row are those of mtp_logits.npy; logits = its prediction of ids[row+3]",
        "tolerance": "this reference is float32 torch over the bf16 weights; the main model's logits of this "
                     f"forward are within {main_logits_difference(ref, main, seqs):.2g} (max abs) of transformers' "
                     "(reference/logits.npy)",
        "command": command,
        "sequences": entries,
    }
    with open(os.path.join(ref, "mtp.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return index
