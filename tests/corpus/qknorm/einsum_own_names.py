# attnprep: qknorm
# expect: passed
"""einsum in (B, T, H, D), own attribute names, F.rms_norm with a weight, -1e9 fills."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class QKNormAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.q_scale = nn.Parameter(torch.ones(self.d))
        self.k_scale = nn.Parameter(torch.ones(self.d))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self.wq(x).reshape(B, T, self.h, self.d)
        k = self.wk(x).reshape(B, T, self.h, self.d)
        v = self.wv(x).reshape(B, T, self.h, self.d)
        q = F.rms_norm(q, (self.d,), self.q_scale, eps=1e-6)
        k = F.rms_norm(k, (self.d,), self.k_scale, eps=1e-6)
        s = torch.einsum("bihd,bjhd->bhij", q, k) / self.d ** 0.5
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask.bool()[:, None, None, :], -1e9)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), -1e9)
        p = self.drop(s.softmax(-1))
        o = torch.einsum("bhij,bjhd->bihd", p, v).reshape(B, T, -1)
        return self.wo(o)
