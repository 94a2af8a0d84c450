# attnprep: mha
# expect: mask_leak
# diagnosis: causal_leaks_next
"""Buggy: the causal mask lets one future key through (tril(1)); d2l-style per-head projections kept as nn.ParameterList entries, one (head_dim, d_model)
weight and (head_dim,) bias per head for q, k and v, each head computed with F.linear in a loop."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        d = d_model // num_heads
        def plist(*shape):
            return nn.ParameterList([nn.Parameter(torch.randn(*shape) * 0.02) for _ in range(num_heads)])
        self.wq, self.wk, self.wv = plist(d, d_model), plist(d, d_model), plist(d, d_model)
        self.bq, self.bk, self.bv = plist(d), plist(d), plist(d)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        keep = torch.ones(B, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril(1)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, :]
        heads = []
        for i in range(self.h):
            q = F.linear(x, self.wq[i], self.bq[i])
            k = F.linear(x, self.wk[i], self.bk[i])
            v = F.linear(x, self.wv[i], self.bv[i])
            s = (q @ k.transpose(1, 2)) / math.sqrt(q.shape[-1])
            heads.append(self.dropout(s.masked_fill(~keep, float("-inf")).softmax(-1)) @ v)
        return self.o_proj(torch.cat(heads, dim=-1))
# bug-line: 28
