"""The forward pass of the GLM-MoE-DSA and DeepSeek-V3 demos, and their multi-token-prediction layer.

Written from the published architectures (DeepSeek-V3 technical report; GLM-5's DSA as the
engine's docs/family_glm_dsa.md states it), float32, eager, on plain torch (1.13 is enough). The
modules are named like the checkpoints' tensors, so a state dict of this model *is* the checkpoint's
tensor list. What the math is, step by step:

  layer      h += Attn(RMSNorm(h)); h += FFN(RMSNorm(h))        (rms_norm_eps)
  MLA        q = q_b(RMSNorm6(q_a x)), per head [nope | rope]; [latent | k_rope] = kv_a x;
             [k_nope | v] = kv_b(RMSNorm6(latent)) per head; RoPE on q's rope part and the one shared
             k_rope; softmax(q.k * scale) v; o_proj.  (RMSNorm6: eps 1e-6, the inner norms' default)
  RoPE       split-half rotation; DeepSeek-V3 stores the rope parts interleaved (rope_interleave) and
             gathers even then odd values first; its YaRN scales the softmax by mscale(factor)^2
  DSA        (GLM) per row, the index_topk past positions with the best indexer score stay (all of
             them while the context is shorter): k = RoPE(LayerNorm(wk x)) rope part first,
             q_h = RoPE(wq_b q_resid), w = weights_proj(x) / sqrt(heads),
             score = sum_h w_h (q_h . k) / sqrt(index_head_dim)
  router     sigmoid; + e_score_correction_bias only to choose (best topk_group of n_group groups,
             a group scored by its two best); weights = chosen sigmoids / (sum + 1e-20) * scaling
  FFN        dense SwiGLU (first layers), or routed experts + shared experts (SwiGLU each)

The MTP layer (DeepSeek-V3 report section 2.2; the tensor names and the input convention of vLLM's
deepseek_mtp.py, SGLang's deepseek_nextn.py and llama.cpp's GLM_DSA nextn graph), at position i:
  x_i = eh_proj([enorm(embed(token_{i+1})) ; hnorm(h_i)])      embedding half first
  g_i = DecoderLayer(x_i)   (attention over the MTP layer's own rows 0..i; MoE like the sparse layers)
  logits_i = shared_head.head(shared_head.norm(g_i))            predicts token_{i+2}
where h_i is the main model's last hidden state AFTER its final norm (model.norm), the row its
lm_head reads.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

INNER_EPS = 1e-6  # the MLA's q_a/kv_a RMSNorms and the indexer's LayerNorm


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def linear(n_in, n_out):
    return nn.Linear(n_in, n_out, bias=False)


class Config:
    """The fields of config.json the math reads, with the family's defaults where the file may omit them."""

    def __init__(self, raw):
        self.raw = raw
        arch = raw["architectures"][0]
        if arch not in ("GlmMoeDsaForCausalLM", "DeepseekV3ForCausalLM"):
            raise ValueError(f"config.json: architecture {arch!r} is neither GLM-MoE-DSA nor DeepSeek-V3")
        self.glm = arch == "GlmMoeDsaForCausalLM"
        g = raw.get
        self.hidden = raw["hidden_size"]
        self.layers = raw["num_hidden_layers"]
        self.vocab = raw["vocab_size"]
        self.heads = raw["num_attention_heads"]
        self.q_lora = raw["q_lora_rank"]
        self.kv_lora = raw["kv_lora_rank"]
        self.nope = raw["qk_nope_head_dim"]
        self.rope_dim = raw["qk_rope_head_dim"]
        self.v_dim = raw["v_head_dim"]
        self.eps = raw["rms_norm_eps"]
        self.inter = raw["intermediate_size"]
        self.moe_inter = raw["moe_intermediate_size"]
        self.experts = raw["n_routed_experts"]
        self.shared = raw["n_shared_experts"]
        self.top_k = raw["num_experts_per_tok"]
        self.n_group = g("n_group", 1)
        self.topk_group = g("topk_group", 1)
        self.norm_topk = g("norm_topk_prob", True)
        self.scaling = raw["routed_scaling_factor"]
        self.rope = raw["rope_parameters"]
        self.interleave = (not self.glm) and g("rope_interleave", True)
        if "mlp_layer_types" in raw:
            self.moe = [t == "sparse" for t in raw["mlp_layer_types"]]
        else:
            self.moe = [l >= raw["first_k_dense_replace"] for l in range(self.layers)]
        self.index_topk = g("index_topk")
        self.index_heads = g("index_n_heads")
        self.index_dim = g("index_head_dim")
        self.mtp_layers = g("num_nextn_predict_layers", 0)

    @property
    def qk_dim(self):
        return self.nope + self.rope_dim


def yarn_mscale(scale, m):
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


class Rope:
    """cos/sin tables of the split-half rotation over qk_rope_head_dim values, and the softmax scale."""

    def __init__(self, cfg):
        p, dim, base = cfg.rope, cfg.rope_dim, cfg.rope["rope_theta"]
        exponents = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
        inv_freq = 1.0 / (base ** exponents)
        self.attention_factor = 1.0
        self.softmax_scale = cfg.qk_dim ** -0.5
        if p["rope_type"] == "yarn":
            factor = p["factor"]
            original = p.get("original_max_position_embeddings")
            if original:  # DeepSeek's files: the factor is the ratio of the two context lengths
                factor = cfg.raw["max_position_embeddings"] / original
            else:
                original = cfg.raw["max_position_embeddings"]

            def correction_dim(rotations):
                return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))
            low = max(math.floor(correction_dim(p.get("beta_fast", 32.0))), 0)
            high = min(math.ceil(correction_dim(p.get("beta_slow", 1.0))), dim - 1)
            if low == high:
                high += 0.001
            ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
            extrapolation = 1 - ramp
            inv_freq = inv_freq / factor * (1 - extrapolation) + inv_freq * extrapolation
            m, m_all = p.get("mscale", 1.0), p.get("mscale_all_dim", 0.0)
            self.attention_factor = yarn_mscale(factor, m) / yarn_mscale(factor, m_all) if m_all else yarn_mscale(factor)
            # the attention's own YaRN correction reads the config's factor as written
            self.softmax_scale *= yarn_mscale(p["factor"], m_all) ** 2 if m_all else 1.0
        elif p["rope_type"] != "default":
            raise ValueError(f"rope_type {p['rope_type']!r} is not supported here")
        self.inv_freq = inv_freq
        self.interleave = cfg.interleave

    def tables(self, positions):
        freqs = positions.float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos() * self.attention_factor, emb.sin() * self.attention_factor

    def apply(self, x, cos, sin):
        """x [..., T, dim] with cos/sin [T, dim]."""
        if self.interleave:
            x = torch.cat([x[..., 0::2], x[..., 1::2]], dim=-1)
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin


class Indexer(nn.Module):
    """GLM's DSA lightning indexer: which past positions each row attends."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wq_b = linear(cfg.q_lora, cfg.index_heads * cfg.index_dim)
        self.wk = linear(cfg.hidden, cfg.index_dim)
        self.k_norm = nn.LayerNorm(cfg.index_dim, eps=INNER_EPS)
        self.weights_proj = linear(cfg.hidden, cfg.index_heads)

    def rope(self, x, rope, cos, sin):
        r = self.cfg.rope_dim
        return torch.cat([rope.apply(x[..., :r], cos, sin), x[..., r:]], dim=-1)

    def scores(self, x, q_resid, rope, cos, sin):
        """[B, T, T] indexer scores (row query, column key), before the causal mask."""
        c = self.cfg
        B, T, _ = x.shape
        k = self.rope(self.k_norm(self.wk(x)), rope, cos, sin)                                # [B, T, D]
        q = self.wq_b(q_resid).view(B, T, c.index_heads, c.index_dim).transpose(1, 2)        # [B, H, T, D]
        q = self.rope(q, rope, cos, sin)
        w = self.weights_proj(x) * c.index_heads ** -0.5                                      # [B, T, H]
        dots = torch.matmul(q, k[:, None].transpose(-1, -2)) * c.index_dim ** -0.5           # [B, H, T, T]
        return (dots * w.transpose(1, 2)[..., None]).sum(1)

    def keep_mask(self, scores, causal):
        """Boolean [B, T, T]: the index_topk best causal positions per row (all when fewer)."""
        T = scores.shape[-1]
        k = self.cfg.index_topk
        if T <= k:
            return causal.expand_as(scores)
        masked = scores.masked_fill(~causal, float("-inf"))
        top = masked.topk(k, dim=-1).indices
        keep = torch.zeros_like(masked, dtype=torch.bool).scatter_(-1, top, True)
        return keep & causal


class Attention(nn.Module):
    """Multi-head latent attention, expanded (transformers' order)."""

    def __init__(self, cfg):
        super().__init__()
        c = cfg
        self.cfg = c
        self.q_a_proj = linear(c.hidden, c.q_lora)
        self.q_a_layernorm = RMSNorm(c.q_lora, INNER_EPS)
        self.q_b_proj = linear(c.q_lora, c.heads * c.qk_dim)
        self.kv_a_proj_with_mqa = linear(c.hidden, c.kv_lora + c.rope_dim)
        self.kv_a_layernorm = RMSNorm(c.kv_lora, INNER_EPS)
        self.kv_b_proj = linear(c.kv_lora, c.heads * (c.nope + c.v_dim))
        self.o_proj = linear(c.heads * c.v_dim, c.hidden)
        if c.glm:
            self.indexer = Indexer(c)

    def forward(self, x, rope, cos, sin, causal, trace=None):
        c = self.cfg
        B, T, _ = x.shape
        q_resid = self.q_a_layernorm(self.q_a_proj(x))
        q = self.q_b_proj(q_resid).view(B, T, c.heads, c.qk_dim).transpose(1, 2)
        q_nope, q_rope = q.split([c.nope, c.rope_dim], dim=-1)
        latent, k_rope = self.kv_a_proj_with_mqa(x).split([c.kv_lora, c.rope_dim], dim=-1)
        kv = self.kv_b_proj(self.kv_a_layernorm(latent)).view(B, T, c.heads, c.nope + c.v_dim).transpose(1, 2)
        k_nope, v = kv.split([c.nope, c.v_dim], dim=-1)
        q_rope = rope.apply(q_rope, cos, sin)
        k_rope = rope.apply(k_rope[:, None], cos, sin).expand(B, c.heads, T, c.rope_dim)
        q = torch.cat([q_nope, q_rope], dim=-1)
        k = torch.cat([k_nope, k_rope], dim=-1)
        logits = torch.matmul(q, k.transpose(-1, -2)) * rope.softmax_scale                   # [B, H, T, T]
        allowed = causal
        if c.glm:
            # The top-k has no gradient; the indexer learns only from the KL to the attention
            # (DeepSeek-V3.2's recipe, the GLM demo's too), on detached inputs.
            index_scores = self.indexer.scores(x.detach(), q_resid.detach(), rope, cos, sin)
            allowed = self.indexer.keep_mask(index_scores, causal)
            if trace is not None:
                trace["index_scores"], trace["causal"] = index_scores, causal
        probs = torch.softmax(logits.masked_fill(~allowed[:, None], float("-inf")), dim=-1)
        if trace is not None:
            trace["probs"] = probs
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, c.heads * c.v_dim)
        return self.o_proj(out)


class SwiGLU(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.gate_proj = linear(hidden, inter)
        self.up_proj = linear(hidden, inter)
        self.down_proj = linear(inter, hidden)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Router(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.weight = nn.Parameter(torch.zeros(cfg.experts, cfg.hidden))
        self.register_buffer("e_score_correction_bias", torch.zeros(cfg.experts))

    def forward(self, x):
        """x [N, hidden] -> (ids [N, k], weights [N, k])."""
        c = self.cfg
        scores = torch.sigmoid(F.linear(x, self.weight))
        choice = scores.detach() + self.e_score_correction_bias
        if c.n_group > 1:
            groups = choice.view(-1, c.n_group, c.experts // c.n_group)
            group_scores = groups.topk(2, dim=-1).values.sum(-1)
            best = group_scores.topk(c.topk_group, dim=-1).indices
            group_mask = torch.zeros_like(group_scores).scatter_(1, best, 1.0)
            expert_mask = group_mask[:, :, None].expand_as(groups).reshape(-1, c.experts)
            choice = choice.masked_fill(expert_mask == 0, 0.0)
        ids = choice.topk(c.top_k, dim=-1).indices
        weights = scores.gather(1, ids)
        if c.norm_topk:
            weights = weights / (weights.sum(-1, keepdim=True) + 1e-20)
        return ids, weights * c.scaling


class MoE(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.gate = Router(cfg)
        self.experts = nn.ModuleList(SwiGLU(cfg.hidden, cfg.moe_inter) for _ in range(cfg.experts))
        self.shared_experts = SwiGLU(cfg.hidden, cfg.moe_inter * cfg.shared)
        self.loads = None  # when a tensor, each expert's picks are added to it (the bias update's input)

    def forward(self, x):
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        ids, weights = self.gate(flat)
        if self.loads is not None:
            self.loads += torch.bincount(ids.reshape(-1), minlength=self.cfg.experts).float()
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows, slot = (ids == e).nonzero(as_tuple=True)
            if rows.numel():
                out = out.index_add(0, rows, expert(flat[rows]) * weights[rows, slot, None])
        return (out + self.shared_experts(flat)).view(shape)


class DecoderLayer(nn.Module):
    def __init__(self, cfg, moe):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden, cfg.eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden, cfg.eps)
        self.mlp = MoE(cfg) if moe else SwiGLU(cfg.hidden, cfg.inter)

    def forward(self, h, rope, cos, sin, causal, trace=None):
        h = h + self.self_attn(self.input_layernorm(h), rope, cos, sin, causal, trace)
        return h + self.mlp(self.post_attention_layernorm(h))


class Backbone(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.hidden)
        self.layers = nn.ModuleList(DecoderLayer(cfg, cfg.moe[l]) for l in range(cfg.layers))
        self.norm = RMSNorm(cfg.hidden, cfg.eps)


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()[None]


class MainModel(nn.Module):
    """The demo's decoder: forward(ids) -> (logits, hidden) with hidden = model.norm(last layer output)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.rope = Rope(cfg)
        self.model = Backbone(cfg)
        self.lm_head = linear(cfg.hidden, cfg.vocab)

    def forward(self, ids, states=None):
        T = ids.shape[1]
        cos, sin = self.rope.tables(torch.arange(T))
        causal = causal_mask(T)
        h = self.model.embed_tokens(ids)
        if states is not None:
            states.append(h)
        for layer in self.model.layers:
            h = layer(h, self.rope, cos, sin, causal)
            if states is not None:
                states.append(h)
        h = self.model.norm(h)
        if states is not None:
            states[-1] = h  # transformers' hidden_states: the last entry after the final norm
        return self.lm_head(h), h


class SharedHead(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm = RMSNorm(cfg.hidden, cfg.eps)
        self.head = linear(cfg.hidden, cfg.vocab)


class MtpLayer(DecoderLayer):
    """One multi-token-prediction layer, named as model.layers.<num_hidden_layers>.* of the checkpoints.

    embed_tokens and shared_head.head are the main model's (DeepSeek-V3's files store copies of
    them under this prefix, GLM-5's leave them out); they are passed in, not owned.
    """

    def __init__(self, cfg):
        super().__init__(cfg, moe=True)
        self.cfg = cfg
        self.enorm = RMSNorm(cfg.hidden, cfg.eps)
        self.hnorm = RMSNorm(cfg.hidden, cfg.eps)
        self.eh_proj = linear(2 * cfg.hidden, cfg.hidden)
        self.shared_head = nn.Module()
        self.shared_head.norm = RMSNorm(cfg.hidden, cfg.eps)

    def step(self, hidden, next_ids, embed, rope, positions, trace=None):
        """g = the layer's output rows for main hidden rows `hidden` [B, T, H] at `positions` (0..T-1)
        and the tokens that follow them `next_ids` [B, T]; causal over these T rows."""
        cos, sin = rope.tables(positions)
        x = self.eh_proj(torch.cat([self.enorm(embed(next_ids)), self.hnorm(hidden)], dim=-1))
        if trace is not None:
            trace["eh_proj_out"] = x
        return super().forward(x, rope, cos, sin, causal_mask(hidden.shape[1]), trace)

    def logits(self, g, head):
        return head(self.shared_head.norm(g))
