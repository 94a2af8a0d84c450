# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""Qwen2-style module with a typed config: the padding mask becomes a finfo.min fill through
torch.where, with the condition the wrong way round (real tokens taken as the ones to block)."""

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class AttnConfig:
    hidden_size: int
    num_attention_heads: int
    attention_dropout: float = 0.0


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.config = AttnConfig(d_model, num_heads, dropout)
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        bsz, q_len, _ = x.size()
        hidden_shape = (bsz, q_len, -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        min_value = torch.finfo(attn_weights.dtype).min
        if attention_mask is not None:
            pad = attention_mask[:, None, None, :].bool()
            attn_weights = torch.where(pad, min_value, attn_weights)
        if is_causal:
            keep = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).tril()
            attn_weights = torch.where(keep, attn_weights, min_value)
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.config.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1).contiguous()
        return self.o_proj(attn_output)
# bug-line: 43
