# attnprep: cross_attention
# expect: passed
"""Correct: per-sample attention written for one sample and torch.func.vmap'd over the batch; no mask -> all True."""
import torch
import torch.nn as nn
from torch.func import vmap


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: int | None = None, dropout: float = 0.0):
        super().__init__()
        dc = d_model if d_context is None else d_context
        self.H = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(dc, d_model)
        self.v_proj = nn.Linear(dc, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def _one(self, q, k, v, m):  # q (T, C), k/v (S, C), m (S,)
        T, C = q.shape
        H = self.H
        qh = q.view(T, H, C // H)
        kh = k.view(-1, H, C // H)
        vh = v.view(-1, H, C // H)
        s = torch.einsum("thd,shd->hts", qh, kh) * (C // H) ** -0.5
        s = s.masked_fill(~m, float("-inf"))
        return torch.einsum("hts,shd->thd", s.softmax(-1), vh).reshape(T, C)

    def forward(self, x, context, context_mask=None):
        if context_mask is None:
            context_mask = torch.ones(context.shape[:2], dtype=torch.bool, device=x.device)
        y = vmap(self._one)(self.q_proj(x), self.k_proj(context), self.v_proj(context), context_mask)
        return self.o_proj(y)
