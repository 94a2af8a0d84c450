# attnprep: gqa
# expect: wrong_output
# diagnosis: scale_by_dim
"""Llama-style repeat_kv; the scores are divided by head_dim instead of sqrt(head_dim)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(batch, num_key_value_heads, seqlen, head_dim) -> (batch, num_attention_heads, seqlen, head_dim)"""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.attention_dropout = dropout

        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=True)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=True)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        bsz, q_len, _ = x.size()

        query_states = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / self.head_dim

        # one boolean "may attend" mask, broadcast to (bsz, 1, q_len, kv_len)
        allowed = torch.ones(1, 1, q_len, q_len, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed & torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :].bool()
        attn_weights = attn_weights.masked_fill(~allowed, torch.finfo(attn_weights.dtype).min)

        # upcast attention to fp32
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)  # (bsz, num_heads, q_len, head_dim)

        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)
