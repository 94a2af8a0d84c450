# attnprep: mha
# expect: mask_leak
# diagnosis: mask_after_softmax
"""Interview-notes style (numbered steps in comments, torch.where everywhere): both masks zero the
probabilities after the softmax instead of blocking the scores before it."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    # 1) project  2) split heads  3) scores / sqrt(d)  4) softmax  5) mask  6) weighted sum  7) merge
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.v_proj, self.o_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.h, self.d).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d)  # 3)
        a = torch.softmax(s, dim=-1)  # 4)
        ok = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            ok = ok & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            ok = ok & attention_mask[:, None, None, :]
        a = torch.where(ok, a, torch.zeros_like(a))  # 5)
        y = self.drop(a) @ v  # 6)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))  # 7)
# bug-line: 32
