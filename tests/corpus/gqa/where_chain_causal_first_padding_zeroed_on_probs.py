# attnprep: gqa
# expect: mask_leak
# diagnosis: mask_after_softmax
"""torch.where for every mask: the causal mask chosen into the scores before the softmax, the
key padding chosen into the probabilities after it (a zero where the key is padded), KV heads
grouped by reshape of the query heads (no repeat at all)."""
import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        r = self.h // self.g
        q = self.q_proj(x).view(B, T, self.g, r, self.d).permute(0, 2, 3, 1, 4)  # (B, G, r, T, D)
        k = self.k_proj(x).view(B, T, self.g, 1, self.d).permute(0, 2, 3, 1, 4)  # (B, G, 1, T, D)
        v = self.v_proj(x).view(B, T, self.g, 1, self.d).permute(0, 2, 3, 1, 4)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)  # (B, G, r, T, T)
        if is_causal:
            later = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            s = torch.where(later, torch.tensor(float("-inf"), device=x.device, dtype=s.dtype), s)
        p = torch.softmax(s, dim=-1)
        if attention_mask is not None:
            p = torch.where(attention_mask[:, None, None, None, :], p, torch.zeros((), dtype=p.dtype, device=x.device))
        p = self.drop(p)
        o = (p @ v).permute(0, 3, 1, 2, 4).reshape(B, T, C)  # (B, T, G, r, D) -> (B, T, C)
        return self.o_proj(o)
# bug-line: 35
