# attnprep: mla
# expect: wrong_output
# diagnosis: norm_eps_convention
"""Megatron-Core's MLASelfAttention, sequence-first ([s, b, h] hidden states, [s, b, np, hn] heads):
linear_q_down_proj / linear_q_up_proj, linear_kv_down_proj / linear_kv_up_proj, q_layernorm and
kv_layernorm from a TransformerConfig-like object, core attention by baddbmm on [b * np, s, hn]."""
import math
from types import SimpleNamespace

import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous()
    y = torch.view_as_complex(pairs) * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.config = config = SimpleNamespace(
            hidden_size=d_model, num_attention_heads=num_heads, q_lora_rank=q_lora_rank,
            kv_lora_rank=kv_lora_rank, qk_head_dim=qk_nope_head_dim, qk_pos_emb_head_dim=qk_rope_head_dim,
            v_head_dim=v_head_dim, rotary_base=rope_theta,
            layernorm_epsilon=1e-5,
        )
        self.num_attention_heads_per_partition = num_heads
        self.q_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.softmax_scale = 1.0 / math.sqrt(self.q_head_dim)
        self.linear_q_down_proj = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_layernorm = RMSNorm(q_lora_rank, eps=config.layernorm_epsilon)
        self.linear_q_up_proj = nn.Linear(q_lora_rank, num_heads * self.q_head_dim, bias=False)
        self.linear_kv_down_proj = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_layernorm = RMSNorm(kv_lora_rank, eps=config.layernorm_epsilon)
        self.linear_kv_up_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.linear_proj = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        cfg, np_ = self.config, self.num_attention_heads_per_partition
        hidden_states = x.transpose(0, 1)                                   # [s, b, h]
        s, b, _ = hidden_states.shape
        rotary = precompute_freqs_cis(cfg.qk_pos_emb_head_dim, s, cfg.rotary_base, device=x.device)

        q = self.linear_q_up_proj(self.q_layernorm(self.linear_q_down_proj(hidden_states)))
        q = q.view(s, b, np_, self.q_head_dim)                               # [s, b, np, hn]
        q_no_pe, q_pos_emb = torch.split(q, [cfg.qk_head_dim, cfg.qk_pos_emb_head_dim], dim=-1)

        kv_combined = self.linear_kv_down_proj(hidden_states)
        kv_compressed, k_pos_emb = torch.split(kv_combined, [cfg.kv_lora_rank, cfg.qk_pos_emb_head_dim], dim=-1)
        kv = self.linear_kv_up_proj(self.kv_layernorm(kv_compressed)).view(s, b, np_, cfg.qk_head_dim + cfg.v_head_dim)
        k_no_pe, value = torch.split(kv, [cfg.qk_head_dim, cfg.v_head_dim], dim=-1)

        # rotary on [b, s, n, d] as the helper expects
        q_pos_emb = apply_rotary_emb(q_pos_emb.transpose(0, 1), rotary).transpose(0, 1)
        k_pos_emb = apply_rotary_emb(k_pos_emb.transpose(0, 1).unsqueeze(2), rotary).transpose(0, 1)
        query = torch.cat([q_no_pe, q_pos_emb], dim=-1)                                     # [s, b, np, hn]
        key = torch.cat([k_no_pe, k_pos_emb.expand(-1, -1, np_, -1)], dim=-1)               # [s, b, np, hn]

        # core attention: [b * np, sq, hn] x [b * np, hn, sk]
        q2 = query.reshape(s, b * np_, -1).transpose(0, 1)
        k2 = key.reshape(s, b * np_, -1).permute(1, 2, 0)
        scores = torch.baddbmm(torch.empty(b * np_, s, s, dtype=x.dtype, device=x.device), q2, k2,
                               beta=0.0, alpha=self.softmax_scale).view(b, np_, s, s)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask.view(b, 1, 1, s), -10000.0)
        if is_causal:
            scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1), -10000.0)
        probs = torch.softmax(scores, dim=-1).view(b * np_, s, s)
        ctx = torch.bmm(probs, value.reshape(s, b * np_, -1).transpose(0, 1))                # [b * np, s, hv]
        ctx = ctx.view(b, np_, s, -1).permute(2, 0, 1, 3).reshape(s, b, -1)                  # [s, b, np * hv]
        return self.linear_proj(ctx).transpose(0, 1)
# bug-line: 47
