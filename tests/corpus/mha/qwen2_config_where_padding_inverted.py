# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""Qwen2-style attention with a type-hinted config and a torch.where mask, where the padding mask is
read the wrong way round (`attention_mask == 0` kept as the allowed keys)."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class AttnConfig:
    hidden_size: int
    num_attention_heads: int
    attention_dropout: float = 0.0


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.config = AttnConfig(d_model, num_heads, dropout)
        self.num_heads: int = num_heads
        self.head_dim: int = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=True)
        self.k_proj = nn.Linear(d_model, d_model, bias=True)
        self.v_proj = nn.Linear(d_model, d_model, bias=True)
        self.o_proj = nn.Linear(d_model, d_model, bias=True)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None,
                is_causal: bool = False) -> torch.Tensor:
        bsz, q_len, _ = hidden_states.size()
        hidden_shape = (bsz, q_len, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        min_value = torch.finfo(attn_weights.dtype).min
        if attention_mask is not None:
            pad = attention_mask[:, None, None, :] == 0
            attn_weights = torch.where(pad, attn_weights, min_value)
        if is_causal:
            future = torch.ones(q_len, q_len, dtype=torch.bool, device=hidden_states.device).triu(1)
            attn_weights = torch.where(future, min_value, attn_weights)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1).contiguous()
        return self.o_proj(attn_output)
# bug-line: 44
