# attnprep: mha_fused
# expect: passed
"""Correct: nn.Unflatten splits the fused output into (3, H, D); narrow() picks q/k/v; baddbmm beta=0."""
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.H, self.D = num_heads, d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.unflat = nn.Unflatten(-1, (3, num_heads, d_model // num_heads))
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = self.unflat(self.qkv_proj(x))               # (B, T, 3, H, D)
        q = qkv.narrow(2, 0, 1).squeeze(2).transpose(1, 2).reshape(B * self.H, T, self.D)
        k = qkv.narrow(2, 1, 1).squeeze(2).transpose(1, 2).reshape(B * self.H, T, self.D)
        v = qkv.narrow(2, 2, 1).squeeze(2).transpose(1, 2).reshape(B * self.H, T, self.D)
        empty = torch.empty(B * self.H, T, T, dtype=x.dtype, device=x.device)
        s = torch.baddbmm(empty, q, k.transpose(1, 2), beta=0, alpha=self.D ** -0.5).view(B, self.H, T, T)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        keep = keep.expand(B, 1, T, T)
        if attention_mask is not None:
            keep = keep & attention_mask.view(B, 1, 1, T)
        s = s.masked_fill(~keep, torch.finfo(s.dtype).min)
        p = self.dropout(s.softmax(dim=-1)).view(B * self.H, T, T)
        y = torch.bmm(p, v).view(B, self.H, T, self.D).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)
