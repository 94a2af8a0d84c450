# attnprep: cross_attention
# expect: mask_leak
# diagnosis: cross_scale_d_context + padding_mask_ignored
"""Whisper's MultiHeadAttention used as cross-attention: q and k each scaled by a ** -0.25 power
(their product is the 1 / sqrt scale), query / key / value / out names, key without bias in Whisper
but with one here; the power is taken of d_context, and context_mask is accepted and never used."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.n_head = num_heads
        self.d_context = d_context
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_context, d_model)
        self.value = nn.Linear(d_context, d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        q, k, v = self.query(x), self.key(context), self.value(context)
        n_batch, n_ctx, n_state = q.shape
        scale = self.d_context ** -0.25
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3) * scale
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 3, 1) * scale
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        qk = (q @ k).float()
        w = F.softmax(qk, dim=-1).to(q.dtype)
        return self.out((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))
# bug-line: 26, 30
