# attnprep: gqa
# expect: passed
"""Qwen2-style typed module: repeat_kv by expand + reshape, a bool mask to torch.where with finfo.min,
softmax in float32 and cast back: correct."""

import torch
from torch import nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.head_dim = d_model // num_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = dropout
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=True)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=True)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = repeat_kv(self.k_proj(x).view(hidden_shape).transpose(1, 2), self.num_key_value_groups)
        value_states = repeat_kv(self.v_proj(x).view(hidden_shape).transpose(1, 2), self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        T = x.shape[1]
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed.tril()
        allowed = allowed[None, None]
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :].bool()
        attn_weights = torch.where(allowed, attn_weights, torch.finfo(attn_weights.dtype).min)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        return self.o_proj(attn_output.reshape(*input_shape, -1))
