# attnprep: mha
# expect: passed
"""Correct: a 2025 Hugging Face modeling file: a config object read with getattr(config, "head_dim",
None) or hidden // heads, a module-level eager_attention_forward(module, query, key, value,
attention_mask, scaling, dropout) looked up in an ALL_ATTENTION_FUNCTIONS-style table by
config._attn_implementation, the padding mask turned into a 4-d additive mask by a helper."""

from types import SimpleNamespace
from typing import Callable, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


def eager_attention_forward(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            attention_mask: Optional[torch.Tensor], scaling: float, dropout: float = 0.0,
                            **kwargs):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


ALL_ATTENTION_FUNCTIONS: dict[str, Callable] = {"eager": eager_attention_forward}


def _prepare_4d_mask(attention_mask, is_causal, q_len, dtype, device):
    min_value = torch.finfo(dtype).min
    mask = torch.zeros(1, 1, q_len, q_len, dtype=dtype, device=device)
    if is_causal:
        mask = mask.masked_fill(torch.ones(q_len, q_len, dtype=torch.bool, device=device).triu(1), min_value)
    if attention_mask is not None:
        mask = mask.masked_fill(~attention_mask[:, None, None, :], min_value)
    return mask


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        config = SimpleNamespace(hidden_size=d_model, num_attention_heads=num_heads, attention_dropout=dropout,
                                 attention_bias=True, _attn_implementation="eager")
        self.config = config
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = config.attention_dropout
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=config.attention_bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=config.attention_bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=config.attention_bias)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=config.attention_bias)

    def forward(self, x, attention_mask=None, is_causal=False):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        mask = None
        if attention_mask is not None or is_causal:
            mask = _prepare_4d_mask(attention_mask, is_causal, x.shape[1], x.dtype, x.device)
        attention_interface = ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]
        attn_output, attn_weights = attention_interface(
            self, query_states, key_states, value_states, mask,
            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output), attn_weights
