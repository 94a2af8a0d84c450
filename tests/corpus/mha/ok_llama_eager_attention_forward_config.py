# attnprep: mha
# expect: passed
"""Correct: Llama's modeling code for MHA: a dataclass config, eager_attention_forward(module, ...) with repeat_kv(n_rep=1), a 4-D additive mask of finfo.min clamped, softmax in float32 cast back, (out, attn_weights) returned (Llama 风格：config 对象 + eager_attention_forward)."""
from dataclasses import dataclass
from typing import Optional, Tuple

import torch
from torch import nn


@dataclass
class LlamaConfig:
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    attention_dropout: float = 0.0
    attention_bias: bool = True


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module: nn.Module, query, key, value, attention_mask: Optional[torch.Tensor],
                            scaling: float, dropout: float = 0.0, **kwargs) -> Tuple[torch.Tensor, torch.Tensor]:
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


def _prepare_4d_mask(attention_mask, is_causal, q_len, dtype, device):
    min_dtype = torch.finfo(dtype).min
    mask = torch.zeros(1, 1, q_len, q_len, dtype=dtype, device=device)
    if is_causal:
        mask = torch.full((q_len, q_len), min_dtype, dtype=dtype, device=device).triu(1)[None, None]
    if attention_mask is not None:
        pad = (~attention_mask)[:, None, None, :].to(dtype) * min_dtype  # (B,1,1,T)
        mask = (mask + pad).clamp(min=min_dtype)
    return mask


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        config = LlamaConfig(d_model, num_heads, num_heads, dropout)
        self.config = config
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = config.attention_dropout
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=config.attention_bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=config.attention_bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=config.attention_bias)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=config.attention_bias)

    def forward(self, x, attention_mask=None, is_causal=False):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        mask4d = None
        if attention_mask is not None or is_causal:
            mask4d = _prepare_4d_mask(attention_mask, is_causal, x.shape[1], x.dtype, x.device)
        attn_output, attn_weights = eager_attention_forward(
            self, query_states, key_states, value_states, mask4d,
            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output), attn_weights
