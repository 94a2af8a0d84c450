# attnprep: mha
# expect: passed
"""Mistral-like: typed, wq/wk/wv/wo, one additive float mask built with torch.where, einsum on
(B, T, H, D) without transposes."""

from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.n_heads: int = num_heads
        self.head_dim: int = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)
        self.p = dropout

    def forward(self, x: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                is_causal: bool = False) -> torch.Tensor:
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        scores = torch.einsum("bqhd,bkhd->bhqk", xq, xk) * self.head_dim ** -0.5
        allowed = torch.ones(bsz, 1, seqlen, seqlen, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            allowed = allowed & attention_mask.view(bsz, 1, 1, seqlen)
        if is_causal:
            allowed = allowed & torch.ones(seqlen, seqlen, dtype=torch.bool, device=x.device).tril()
        bias = torch.where(allowed, 0.0, torch.finfo(scores.dtype).min).to(scores.dtype)
        probs = F.dropout(F.softmax(scores + bias, dim=-1), p=self.p, training=self.training)
        out = torch.einsum("bhqk,bkhd->bqhd", probs, xv).reshape(bsz, seqlen, -1)
        return self.wo(out)
