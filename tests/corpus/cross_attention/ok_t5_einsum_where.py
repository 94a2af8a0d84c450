# attnprep: cross_attention
# expect: passed
"""T5 / Whisper-like decoder cross-attention: einsum on (B, T, H, D), the context mask through
torch.where with finfo.min, type-hinted."""

from typing import Optional

import torch
from torch import Tensor, nn


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: Optional[int] = None, dropout: float = 0.0) -> None:
        super().__init__()
        kv_dim = d_model if d_context is None else d_context
        self.n_heads = num_heads
        self.key_value_proj_dim = d_model // num_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(kv_dim, d_model)
        self.v = nn.Linear(kv_dim, d_model)
        self.o = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, context: Tensor, context_mask: Optional[Tensor] = None) -> Tensor:
        B, T, _ = x.shape
        S = context.shape[1]
        H, D = self.n_heads, self.key_value_proj_dim
        q = self.q(x).view(B, T, H, D)
        k = self.k(context).view(B, S, H, D)
        v = self.v(context).view(B, S, H, D)
        scores = torch.einsum("bthd,bshd->bhts", q, k) / D ** 0.5
        if context_mask is not None:
            scores = torch.where(context_mask[:, None, None, :], scores, torch.finfo(scores.dtype).min)
        w = self.drop(scores.softmax(dim=-1))
        return self.o(torch.einsum("bhts,bshd->bthd", w, v).reshape(B, T, H * D))
