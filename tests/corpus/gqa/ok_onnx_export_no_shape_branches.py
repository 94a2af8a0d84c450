# attnprep: gqa
# expect: passed
"""Written to export to ONNX with a static graph: no Python branch on shapes or on the masks' presence
inside the traced part; a missing padding mask becomes an all-True one, the causal flag becomes a
boolean tensor OR-ed into the band, the kv heads are grouped by an index_select of a precomputed
head map (an ONNX Gather) instead of repeat_interleave."""
import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.kvh = num_kv_heads
        self.dh = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.dh)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.dh)
        self.o_proj = nn.Linear(d_model, d_model)
        self.register_buffer("head_map", torch.arange(num_heads) // (num_heads // num_kv_heads), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def _attend(self, x, keep_keys, causal_flag):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.dh).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kvh, self.dh).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kvh, self.dh).transpose(1, 2)
        k = k.index_select(1, self.head_map.to(x.device))
        v = v.index_select(1, self.head_map.to(x.device))
        scores = torch.matmul(q, k.transpose(2, 3)) * (self.dh ** -0.5)
        pos = torch.arange(T, device=x.device)
        band = (pos[None, :] <= pos[:, None]) | ~causal_flag  # (T, T): everything when not causal
        allowed = band[None, None] & keep_keys[:, None, None, :]
        scores = torch.where(allowed, scores, torch.tensor(-1e9, dtype=scores.dtype, device=x.device))
        probs = self.dropout(torch.softmax(scores, dim=-1))
        return self.o_proj(torch.matmul(probs, v).transpose(1, 2).reshape(B, T, C))

    def forward(self, x, attention_mask=None, is_causal=False):
        keep = attention_mask if attention_mask is not None else torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        flag = torch.tensor(bool(is_causal), device=x.device)
        return self._attend(x, keep, flag)
