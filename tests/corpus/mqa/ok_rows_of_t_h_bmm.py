# attnprep: mqa
# expect: passed
"""Correct: all queries as (t, h) rows of one bmm against the single key head, mul_ in place on the fresh scores, an OR-ed kill mask."""
import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.H = num_heads
        self.D = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.D)
        self.v_proj = nn.Linear(d_model, self.D)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.H, self.D
        q = self.q_proj(x).view(B, T * H, D)            # rows: (t, h) pairs — all heads' queries at once
        k = self.k_proj(x)                              # (B, T, D) one key head
        v = self.v_proj(x)
        s = torch.bmm(q, k.transpose(1, 2)).mul_(D ** -0.5).view(B, T, H, T)  # (B, Tq, H, Tk)
        kill = torch.zeros(B, T, 1, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            kill |= (~attention_mask).view(B, 1, 1, T)
        if is_causal:
            kill |= torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1).view(1, T, 1, T)
        s = s.masked_fill(kill, -1e9)
        p = s.softmax(-1).view(B, T * H, T)
        o = torch.bmm(p, v).view(B, T, C)               # (t, h) rows back to (B, T, H*D)
        return self.o_proj(o)
