# attnprep: cross_attention
# expect: mask_leak
# diagnosis: cross_causal_mask + mask_after_softmax
"""Marian-NMT's transformer.h names ported: `LayerAttention`, `MultiHead(q, keys, values, mask)`,
`SplitHeads` / `JoinHeads`, the source mask `srcMask` multiplied in as 0/1 floats, Wq / Wk / Wv /
Wo kept as nn.Linear attributes under the contract's names. Two slips: the decoder self-attention's
triangle was copied into the cross-attention (tril over (T, S)), and the source mask multiplies the
probabilities after the softmax (no renormalisation)."""

import math

import torch
import torch.nn as nn


def SplitHeads(x, dimHeads):
    B, T, C = x.shape
    return x.view(B, T, dimHeads, C // dimHeads).permute(0, 2, 1, 3)


def JoinHeads(x):
    B, H, T, D = x.shape
    return x.permute(0, 2, 1, 3).reshape(B, T, H * D)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.dimHeads = num_heads
        d_context = d_model if d_context is None else d_context
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def MultiHead(self, q, keys, values, srcMask):
        qh = SplitHeads(self.q_proj(q), self.dimHeads)
        kh = SplitHeads(self.k_proj(keys), self.dimHeads)
        vh = SplitHeads(self.v_proj(values), self.dimHeads)
        dk = qh.shape[-1]
        z = qh @ kh.transpose(-1, -2) / math.sqrt(dk)
        T, S = z.shape[-2], z.shape[-1]
        z = z.masked_fill(~torch.ones(T, S, dtype=torch.bool, device=z.device).tril(), float("-inf"))
        weights = torch.softmax(z, dim=-1)
        if srcMask is not None:
            weights = weights * srcMask[:, None, None, :].to(weights.dtype)
        return self.o_proj(JoinHeads(weights @ vh))

    def forward(self, x, context, context_mask=None):
        return self.MultiHead(x, context, context, context_mask)
# bug-line: 43, 46
