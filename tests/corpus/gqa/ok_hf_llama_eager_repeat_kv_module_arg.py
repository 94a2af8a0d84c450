# attnprep: gqa
# expect: passed
"""Correct: Llama's repeat_kv (expand on a new axis after the KV heads, then reshape) and eager_attention_forward(module, ...) reading module.num_key_value_groups."""
import torch
from torch import nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(batch, num_key_value_heads, seqlen, head_dim) -> (batch, num_attention_heads, seqlen, head_dim)"""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.head_dim = d_model // num_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = dropout
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=True)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=True)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.shape
        hidden_shape = (bsz, q_len, -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(x).view(hidden_shape).transpose(1, 2)

        min_value = torch.finfo(query_states.dtype).min
        bias = torch.zeros(bsz, 1, q_len, q_len, dtype=query_states.dtype, device=x.device)
        if is_causal:
            future = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).triu(1)
            bias = bias.masked_fill(future, min_value)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask.bool()[:, None, None, :], min_value)

        attn_output, _ = eager_attention_forward(
            self, query_states, key_states, value_states, bias,
            scaling=self.scaling, dropout=0.0 if not self.training else self.attention_dropout,
        )
        attn_output = attn_output.reshape(bsz, q_len, -1).contiguous()
        return self.o_proj(attn_output)
