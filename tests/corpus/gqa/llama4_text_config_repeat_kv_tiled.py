# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""Llama-4's Llama4TextAttention naming: a small text config object, num_key_value_groups, head_dim
from the config, attention_bias, a module-level repeat_kv(hidden_states, n_rep) and an additive mask."""
import torch
import torch.nn as nn


class Llama4TextConfig:
    def __init__(self, hidden_size, num_attention_heads, num_key_value_heads, attention_dropout=0.0):
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.head_dim = hidden_size // num_attention_heads
        self.attention_dropout = attention_dropout
        self.attention_bias = True


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    return hidden_states.repeat(1, n_rep, 1, 1)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.config = Llama4TextConfig(d_model, num_heads, num_kv_heads, dropout)
        cfg = self.config
        self.head_dim = cfg.head_dim
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(cfg.hidden_size, cfg.num_attention_heads * self.head_dim, bias=cfg.attention_bias)
        self.k_proj = nn.Linear(cfg.hidden_size, cfg.num_key_value_heads * self.head_dim, bias=cfg.attention_bias)
        self.v_proj = nn.Linear(cfg.hidden_size, cfg.num_key_value_heads * self.head_dim, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(cfg.num_attention_heads * self.head_dim, cfg.hidden_size, bias=cfg.attention_bias)

    def forward(self, x, attention_mask=None, is_causal=False):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        T = x.shape[1]
        bias = torch.zeros(T, T, dtype=attn_weights.dtype, device=x.device)
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        bias = bias[None, None]
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        attn_weights = (attn_weights + bias).softmax(dim=-1)
        attn_weights = nn.functional.dropout(attn_weights, p=self.config.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).reshape(*input_shape, -1)
        return self.o_proj(attn_output)
# bug-line: 24
