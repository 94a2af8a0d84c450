# attnprep: cross_attention
# expect: passed
"""torch.bmm over (B*H) with view+permute, torch.where with -1e9, softmax in float32 then cast back, type hints."""
import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: Optional[int] = None, dropout: float = 0.0) -> None:
        super().__init__()
        assert d_model % num_heads == 0
        d_context = d_context or d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)

    def _to_heads(self, t: Tensor) -> Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3).reshape(b * self.num_heads, n, self.head_dim)

    def forward(self, x: Tensor, context: Tensor, context_mask: Optional[Tensor] = None) -> Tensor:
        B, T, C = x.shape
        S = context.size(1)
        q = self._to_heads(self.q_proj(x))        # (B*H, T, D)
        k = self._to_heads(self.k_proj(context))  # (B*H, S, D)
        v = self._to_heads(self.v_proj(context))  # (B*H, S, D)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.head_dim)  # (B*H, T, S)
        if context_mask is not None:
            keep = context_mask.repeat_interleave(self.num_heads, dim=0).unsqueeze(1)  # (B*H, 1, S)
            scores = torch.where(keep, scores, torch.tensor(-1e9, dtype=scores.dtype, device=scores.device))
        probs = F.softmax(scores.float(), dim=-1).to(q.dtype)
        probs = self.attn_drop(probs)
        out = torch.bmm(probs, v)  # (B*H, T, D)
        out = out.view(B, self.num_heads, T, self.head_dim).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.o_proj(out)
