# attnprep: cross_attention
# expect: passed
"""Whisper's MultiHeadAttention used with xa: query/key/value/out names, a key without bias (graded
with a zero bias), q and k each scaled by head_dim ** -0.25, k permuted straight to (B, H, D, S)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: int | None = None, dropout: float = 0.0):
        super().__init__()
        n_state, n_ctx_state = d_model, d_context or d_model
        self.n_head = num_heads
        self.query = nn.Linear(n_state, n_state)
        self.key = nn.Linear(n_ctx_state, n_state, bias=False)
        self.value = nn.Linear(n_ctx_state, n_state)
        self.out = nn.Linear(n_state, n_state)

    def forward(self, x, xa, mask=None):
        q = self.query(x)
        k = self.key(xa)
        v = self.value(xa)
        wv = self.qkv_attention(q, k, v, mask)
        return self.out(wv)

    def qkv_attention(self, q, k, v, mask=None):
        n_batch, n_ctx, n_state = q.shape
        scale = (n_state // self.n_head) ** -0.25
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3) * scale
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 3, 1) * scale
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        qk = q @ k  # (B, H, T, S)
        if mask is not None:
            qk = torch.where(mask[:, None, None, :], qk, torch.finfo(qk.dtype).min)
        w = F.softmax(qk.float(), dim=-1).to(q.dtype)
        return (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)
