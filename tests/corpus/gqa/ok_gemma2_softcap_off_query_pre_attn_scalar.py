# attnprep: gqa
# expect: passed
"""Gemma-2's attention block: `query_pre_attn_scalar` for the scale (here the head dim, as the 9B
config), the optional attn_logit_softcapping tanh written out (None by default, as the contract has
no cap), sliding_window optional and off, repeat_kv by repeat_interleave."""
from typing import Optional

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0,
                 attn_logit_softcapping: Optional[float] = None, sliding_window: Optional[int] = None):
        super().__init__()
        self.head_dim = d_model // num_heads
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.query_pre_attn_scalar = self.head_dim
        self.scaling = self.query_pre_attn_scalar ** -0.5
        self.attn_logit_softcapping = attn_logit_softcapping
        self.sliding_window = sliding_window
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)
        self.attention_dropout = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.shape
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        n_rep = self.num_heads // self.num_key_value_heads
        k, v = k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)

        attn_weights = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        if self.attn_logit_softcapping is not None:
            attn_weights = attn_weights / self.attn_logit_softcapping
            attn_weights = torch.tanh(attn_weights)
            attn_weights = attn_weights * self.attn_logit_softcapping

        allowed = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed.tril()
            if self.sliding_window is not None:
                allowed = allowed & allowed.triu(-(self.sliding_window - 1))
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        attn_weights = attn_weights.masked_fill(~allowed, torch.finfo(attn_weights.dtype).min)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)
