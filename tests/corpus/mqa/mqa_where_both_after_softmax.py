# attnprep: mqa
# expect: mask_leak
# diagnosis: mask_after_softmax
"""Interview-notes MQA: one shared K/V head; both masks applied with torch.where on the
probabilities, after the softmax (the rows no longer sum to 1)."""
import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.dk = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.dk)
        self.v_proj = nn.Linear(d_model, self.dk)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.dk).transpose(1, 2)  # B h T dk
        k = self.k_proj(x).unsqueeze(1)  # B 1 T dk, shared by every head
        v = self.v_proj(x).unsqueeze(1)
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.dk), dim=-1)  # B h T T
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask.bool()[:, None, None, :]
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        p = torch.where(keep, p, torch.zeros_like(p))
        out = (p @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
