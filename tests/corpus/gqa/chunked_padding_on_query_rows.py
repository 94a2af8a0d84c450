# attnprep: gqa
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""queries in chunks of 3 with an additive bias; the padding mask blocks query rows, not key columns."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    CHUNK = 3

    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h, self.kv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.kv * self.d)
        self.v_proj = nn.Linear(d_model, self.kv * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv, self.d).transpose(1, 2).repeat_interleave(self.h // self.kv, 1)
        v = self.v_proj(x).view(B, T, self.kv, self.d).transpose(1, 2).repeat_interleave(self.h // self.kv, 1)
        bias = torch.zeros(B, 1, T, T, device=x.device, dtype=x.dtype)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, :, None], float("-inf"))
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        pieces = []
        for start in range(0, T, self.CHUNK):
            qc = q[:, :, start:start + self.CHUNK]
            s = qc @ k.transpose(-2, -1) / math.sqrt(self.d) + bias[:, :, start:start + self.CHUNK]
            pieces.append(F.softmax(s, dim=-1) @ v)
        out = torch.cat(pieces, dim=2)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
# bug-line: 30
