# attnprep: mqa
# expect: passed
"""Correct: k and v never get a head axis: einsum 'bhtd,bsd->bhts'; padding and causal combined into one
bool mask with torch.logical_and and filled with finfo.min."""
import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.H = num_heads
        self.Dh = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.Dh)
        self.v_proj = nn.Linear(d_model, self.Dh)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.Dh).permute(0, 2, 1, 3)
        k, v = self.k_proj(x), self.v_proj(x)
        s = torch.einsum("bhtd,bsd->bhts", q, k) * self.Dh ** -0.5
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = torch.logical_and(keep, attention_mask[:, None, None, :])
        if is_causal:
            keep = torch.logical_and(keep, torch.ones(T, T, dtype=torch.bool, device=x.device).tril())
        s = s.masked_fill(~keep, torch.finfo(s.dtype).min)
        y = torch.einsum("bhts,bsd->bthd", s.softmax(-1), v).reshape(B, T, C)
        return self.o_proj(y)
