# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""ERNIE-4.5's attention naming (Ernie4_5Attention: num_key_value_heads, num_key_value_groups,
head_dim, a freq_allocation kept for its 3-D RoPE and unused here); the KV-head expansion chosen
by a class attribute naming the tensor method, and that method is `repeat`."""
import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    kv_expand_method = "repeat"  # how the KV heads are widened to the query heads
    freq_allocation = 0

    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def _widen(self, states):
        if self.kv_expand_method == "repeat":
            return states.repeat(1, self.num_key_value_groups, 1, 1)
        return states.repeat_interleave(self.num_key_value_groups, dim=1)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.shape
        q = self.q_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self._widen(k)
        v = self._widen(v)
        attn = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            attn = attn + torch.where(attention_mask[:, None, None, :], 0.0, float("-inf"))
        if is_causal:
            attn = attn + torch.full((q_len, q_len), float("-inf"), device=x.device).triu(1)
        attn = self.attention_dropout(attn.softmax(-1))
        out = torch.matmul(attn, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out)
# bug-line: 14
