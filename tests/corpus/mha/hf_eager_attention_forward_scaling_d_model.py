# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""Hugging Face style: an eager_attention_forward(module, ...) helper, the module keeps `scaling`."""
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: Optional[torch.Tensor],
    scaling: float,
    dropout: float = 0.0,
):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.d_model ** -0.5
        self.attention_dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=True)
        self.k_proj = nn.Linear(d_model, d_model, bias=True)
        self.v_proj = nn.Linear(d_model, d_model, bias=True)
        self.o_proj = nn.Linear(d_model, d_model, bias=True)

    def _prepare_4d_mask(self, attention_mask, is_causal, q_len, dtype, device):
        min_dtype = torch.finfo(dtype).min
        allowed = torch.ones(q_len, q_len, dtype=torch.bool, device=device)
        if is_causal:
            allowed = allowed.tril()
        allowed = allowed[None, None]
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :].bool()
        return torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(~allowed, min_dtype)

    def forward(self, x, attention_mask=None, is_causal=False):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        causal_mask = self._prepare_4d_mask(attention_mask, is_causal, x.shape[1], query_states.dtype, x.device)
        attn_output, attn_weights = eager_attention_forward(
            self,
            query_states,
            key_states,
            value_states,
            causal_mask,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling,
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights
# bug-line: 37
