# attnprep: gqa
# expect: wrong_output
# diagnosis: scale_d_model
"""x-transformers habits: the scale kept as `self.scale` from __init__ and folded into the keys
before the dot product (k * scale, then einsum), which is fine where it goes; but the scale was
taken as dim ** -0.5 over the model's width, not one head's."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.heads, self.kv_heads = num_heads, num_kv_heads
        self.dim_head = d_model // num_heads
        self.scale = d_model ** -0.5
        self.to_q = nn.Linear(d_model, num_heads * self.dim_head)
        self.to_k = nn.Linear(d_model, num_kv_heads * self.dim_head)
        self.to_v = nn.Linear(d_model, num_kv_heads * self.dim_head)
        self.to_out = nn.Linear(num_heads * self.dim_head, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, n, _ = x.shape
        g = self.heads // self.kv_heads
        q = self.to_q(x).view(b, n, self.kv_heads, g, self.dim_head)
        k = self.to_k(x).view(b, n, self.kv_heads, self.dim_head)
        v = self.to_v(x).view(b, n, self.kv_heads, self.dim_head)
        k = k * self.scale
        sim = torch.einsum("bikgd,bjkd->bkgij", q, k)
        keep = torch.ones(b, 1, 1, n, n, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, None, :]
        if is_causal:
            keep = keep & torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        sim = sim.masked_fill(~keep, float("-inf"))
        attn = self.attn_dropout(F.softmax(sim, dim=-1))
        out = torch.einsum("bkgij,bjkd->bikgd", attn, v)
        return self.to_out(out.reshape(b, n, -1))
# bug-line: 18
