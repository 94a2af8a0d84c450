# attnprep: mha
# expect: mask_leak
# diagnosis: scale_d_model + padding_mask_on_queries
"""Qwen2-style attention (q/k/v/o_proj, torch.where masks): the padding mask is broadcast over the query rows AND the scores are scaled by 1/sqrt(d_model) (two mistakes)."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.hidden_size = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=True)
        self.k_proj = nn.Linear(d_model, d_model, bias=True)
        self.v_proj = nn.Linear(d_model, d_model, bias=True)
        self.o_proj = nn.Linear(d_model, d_model, bias=True)
        self.attention_dropout = dropout

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None,
                is_causal: bool = False) -> torch.Tensor:
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.hidden_size)
        min_value = torch.finfo(attn_weights.dtype).min
        if is_causal:
            keep = torch.ones(q_len, q_len, dtype=torch.bool, device=hidden_states.device).tril()
            attn_weights = torch.where(keep, attn_weights, min_value)
        if attention_mask is not None:
            keep_rows = attention_mask.bool()[:, None, :, None]
            attn_weights = torch.where(keep_rows, attn_weights, min_value)

        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)
# bug-line: 31, 37
