# attnprep: gqa
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""Hugging Face's newer sdpa_attention_forward interface (module, query, key, value,
attention_mask, dropout, scaling, is_causal) with the SDPA call itself written out by hand,
repeat_kv first, a 4-d bool mask prepared by the caller as _prepare_4d would."""
import math
from typing import Optional

import torch
import torch.nn as nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def _sdpa_by_hand(query, key, value, attn_mask=None, dropout_p=0.0, scale=None, is_causal=False):
    L, S = query.size(-2), key.size(-2)
    scale = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        temp_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=0)
        attn_bias = attn_bias.masked_fill(temp_mask.logical_not(), float("-inf"))
    if attn_mask is not None:
        attn_bias = attn_bias.masked_fill(attn_mask.logical_not(), float("-inf"))
    attn_weight = query @ key.transpose(-2, -1) * scale
    attn_weight = torch.softmax(attn_weight + attn_bias, dim=-1)
    attn_weight = torch.dropout(attn_weight, dropout_p, train=True)
    return attn_weight @ value


def sdpa_attention_forward(module: nn.Module, query, key, value, attention_mask: Optional[torch.Tensor],
                           dropout: float = 0.0, scaling: Optional[float] = None, is_causal: bool = False):
    key = repeat_kv(key, module.num_key_value_groups)
    value = repeat_kv(value, module.num_key_value_groups)
    attn_output = _sdpa_by_hand(query, key, value, attn_mask=attention_mask, dropout_p=dropout,
                                scale=scaling, is_causal=is_causal)
    return attn_output.transpose(1, 2).contiguous(), None


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.head_dim = d_model // num_heads
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = dropout
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        mask_4d = None
        if attention_mask is not None:
            mask_4d = attention_mask[:, None, :, None]          # (B, 1, T, 1)
        attn_output, attn_weights = sdpa_attention_forward(
            self, query_states, key_states, value_states, mask_4d,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling, is_causal=is_causal)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)
# bug-line: 67
