# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""Mistral-Nemo's modeling habits: head_dim kept as its own attribute, num_key_value_groups, a
repeat_kv written with expand + reshape (no copy until the reshape), attention in float32 softmax."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, None, :, :, :].expand(batch, n_rep, num_key_value_heads, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.hidden_size = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)
        self.attention_dropout = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        query_states = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        min_value = torch.finfo(attn_weights.dtype).min
        if is_causal:
            causal_mask = torch.triu(torch.ones(q_len, q_len, dtype=torch.bool, device=x.device), diagonal=1)
            attn_weights = attn_weights.masked_fill(causal_mask, min_value)
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(~attention_mask[:, None, None, :], min_value)
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)
# bug-line: 17
