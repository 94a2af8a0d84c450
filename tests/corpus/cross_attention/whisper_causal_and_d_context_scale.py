# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_causal_mask + cross_scale_d_context
"""Whisper-decoder-style cross-attention with two mistakes: the decoder's causal mask kept (tril over (T, S)) AND the scores scaled by 1/sqrt(d_context)."""

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: int | None = None, dropout: float = 0.0):
        super().__init__()
        self.n_head = num_heads
        self.d_context = d_context or d_model
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(self.d_context, d_model)
        self.value = nn.Linear(self.d_context, d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor, context: Tensor, context_mask: Tensor | None = None) -> Tensor:
        q, k, v = self.query(x), self.key(context), self.value(context)
        n_batch, n_ctx, n_state = q.shape
        S = k.shape[1]
        q = q.view(n_batch, n_ctx, self.n_head, -1).permute(0, 2, 1, 3)
        k = k.view(n_batch, S, self.n_head, -1).permute(0, 2, 3, 1)
        v = v.view(n_batch, S, self.n_head, -1).permute(0, 2, 1, 3)
        qk = (q @ k) * self.d_context ** -0.5
        qk = torch.where(torch.ones(n_ctx, S, dtype=torch.bool, device=x.device).tril(), qk, float("-inf"))
        if context_mask is not None:
            qk = torch.where(context_mask[:, None, None, :].bool(), qk, float("-inf"))
        w = F.softmax(qk.float(), dim=-1).to(q.dtype)
        return self.out((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))
# bug-line: 27, 28
