# attnprep: mqa
# expect: mask_leak
# diagnosis: masks_combined_or
"""Shazeer-style einsum; the two "allowed" masks combined with | instead of &."""

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.d)
        self.v_proj = nn.Linear(d_model, self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k, v = self.k_proj(x), self.v_proj(x)
        logits = torch.einsum("bhtd,bsd->bhts", q, k) / self.d ** 0.5
        allowed = None
        if is_causal:
            allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            pad = attention_mask[:, None, None, :]
            allowed = pad if allowed is None else (allowed | pad)
        if allowed is not None:
            logits = logits.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(logits, dim=-1)
        return self.o_proj(torch.einsum("bhts,bsd->bthd", w, v).reshape(B, T, C))
# bug-line: 30
