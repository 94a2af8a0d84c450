# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""Hunyuan's attention naming (HunYuanAttention: attention_head_dim, use_qk_norm with its
query_layernorm / key_layernorm, here switched off by the config), a small config class whose
softmax_scale_dim falls back to a width when left None; the fallback picks hidden_size."""
import math

import torch
import torch.nn as nn


class HunYuanConfig:
    def __init__(self, hidden_size, num_attention_heads, attention_dropout=0.0, use_qk_norm=False,
                 softmax_scale_dim=None):
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.attention_head_dim = hidden_size // num_attention_heads
        self.attention_dropout = attention_dropout
        self.use_qk_norm = use_qk_norm
        self.softmax_scale_dim = softmax_scale_dim or hidden_size


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.config = HunYuanConfig(d_model, num_heads, attention_dropout=dropout)
        cfg = self.config
        self.q_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.k_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.v_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.o_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.attn_dropout = nn.Dropout(cfg.attention_dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        cfg = self.config
        bsz, q_len, _ = x.shape
        shape = (bsz, q_len, cfg.num_attention_heads, cfg.attention_head_dim)
        query_states = self.q_proj(x).view(shape).transpose(1, 2)
        key_states = self.k_proj(x).view(shape).transpose(1, 2)
        value_states = self.v_proj(x).view(shape).transpose(1, 2)
        if cfg.use_qk_norm:
            raise NotImplementedError("query_layernorm / key_layernorm are off in this port")
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
        attn_weights = attn_weights / math.sqrt(cfg.softmax_scale_dim)
        if attention_mask is not None:
            keep = attention_mask[:, None, None, :]
            attn_weights = attn_weights.masked_fill(~keep, torch.finfo(attn_weights.dtype).min)
        if is_causal:
            upper = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).triu(1)
            attn_weights = attn_weights.masked_fill(upper, torch.finfo(attn_weights.dtype).min)
        attn_weights = torch.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, cfg.hidden_size)
        return self.o_proj(attn_output)
# bug-line: 21
