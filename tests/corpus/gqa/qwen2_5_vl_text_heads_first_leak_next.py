# attnprep: gqa
# expect: mask_leak
# diagnosis: split_heads_no_transpose + causal_leaks_next
"""Qwen2.5-VL's text attention naming (Qwen2_5_VLAttention: num_key_value_heads, num_key_value_groups,
is_causal kept on the module, a float -inf causal matrix made with torch.triu of torch.full)."""
import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.hidden_size = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.attention_dropout = dropout
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=True)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=True)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        query_states = self.q_proj(x).view(bsz, self.num_heads, q_len, self.head_dim)
        key_states = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.repeat_interleave(self.num_key_value_groups, dim=1)
        value_states = value_states.repeat_interleave(self.num_key_value_groups, dim=1)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        if is_causal:
            causal_mask = torch.triu(torch.full((q_len, q_len), float("-inf"), device=x.device), diagonal=2)
            attn_weights = attn_weights + causal_mask
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)
# bug-line: 28, 35
