# attnprep: gqa
# expect: wrong_output
# diagnosis: scale_by_dim
"""IBM Granite's attention: the softmax scale is a config number (`attention_multiplier`) instead of
head_dim ** -0.5, a `GraniteConfig`-like object with multipliers, repeat_kv by expand."""
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class GraniteConfig:
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    attention_dropout: float = 0.0
    attention_bias: bool = True

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads

    @property
    def attention_multiplier(self):
        return 1.0 / self.head_dim


def repeat_kv(hidden_states, n_rep):
    b, n_kv, slen, hd = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    return hidden_states[:, :, None].expand(b, n_kv, n_rep, slen, hd).reshape(b, n_kv * n_rep, slen, hd)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.config = config = GraniteConfig(d_model, num_heads, num_kv_heads, dropout)
        self.head_dim = config.head_dim
        self.num_key_value_groups = num_heads // num_kv_heads
        self.scaling = config.attention_multiplier
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=config.attention_bias)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=config.attention_bias)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=config.attention_bias)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=config.attention_bias)
        self.attn_drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        hidden_shape = (bsz, q_len, -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = repeat_kv(self.k_proj(x).view(hidden_shape).transpose(1, 2), self.num_key_value_groups)
        value_states = repeat_kv(self.v_proj(x).view(hidden_shape).transpose(1, 2), self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        min_value = torch.finfo(attn_weights.dtype).min
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(~attention_mask[:, None, None, :], min_value)
        if is_causal:
            causal = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).triu(1)
            attn_weights = attn_weights.masked_fill(causal, min_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = self.attn_drop(attn_weights)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)
# bug-line: 26
