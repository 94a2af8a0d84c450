# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""StarCoder2's attention (Starcoder2Attention): use_bias on every projection, attention_dropout and
residual_dropout, num_key_value_groups; the KV heads expanded with expand + reshape, the group axis
put before the KV heads."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0, use_bias=True):
        super().__init__()
        self.hidden_size = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.attention_dropout = dropout
        self.residual_dropout = dropout
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=use_bias)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=use_bias)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=use_bias)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=use_bias)

    def _expand_kv(self, hidden):
        b, kvh, t, d = hidden.shape
        g = self.num_key_value_groups
        hidden = hidden[:, None, :, :, :].expand(b, g, kvh, t, d)
        return hidden.reshape(b, kvh * g, t, d)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        query_states = self.q_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        key_states = self._expand_kv(key_states)
        value_states = self._expand_kv(value_states)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            future = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).triu(1)
            attn_weights = attn_weights.masked_fill(future, float("-inf"))
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, self.hidden_size)
        attn_output = self.o_proj(attn_output)
        return F.dropout(attn_output, p=self.residual_dropout, training=self.training)
# bug-line: 32
