# attnprep: gqa
# expect: mask_leak
# diagnosis: gqa_heads_tiled + padding_mask_on_queries
"""Mistral-style GQA with repeat_kv written with .repeat (tiled) AND the padding mask on query rows (two mistakes)."""

import math

import torch
import torch.nn as nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    # (batch, num_key_value_heads, slen, head_dim) -> (batch, num_attention_heads, slen, head_dim)
    if n_rep == 1:
        return hidden_states
    return hidden_states.repeat(1, n_rep, 1, 1)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=False)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False):
        bsz, q_len, _ = x.shape
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)

        attn = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if is_causal:
            attn = attn + torch.full((q_len, q_len), float("-inf"), device=x.device).triu(1)
        if attention_mask is not None:
            attn = attn.masked_fill(~attention_mask.bool()[:, None, :, None], float("-inf"))
        attn = torch.softmax(attn, dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out)
# bug-line: 15, 42
