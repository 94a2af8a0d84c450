# attnprep: mha_fused
# expect: wrong_output
# diagnosis: scores_k_q_swapped
"""HF-style c_attn split unpacked as key, query, value: q and k get each other's weights, which computes k @ q^T (named scores_k_q_swapped, whose why says so)."""

import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)

    def _split_heads(self, t):
        return t.view(t.size(0), t.size(1), self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None, is_causal=False):
        key, query, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        w = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.head_dim)
        T = hidden_states.size(1)
        if is_causal:
            w = w.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=w.device).tril(), torch.finfo(w.dtype).min)
        if attention_mask is not None:
            w = w.masked_fill(~attention_mask[:, None, None, :], torch.finfo(w.dtype).min)
        w = w.softmax(dim=-1)
        out = torch.matmul(w, value).permute(0, 2, 1, 3).reshape(hidden_states.shape)
        return self.c_proj(out)
# bug-line: 25
