# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""Type-hinted, Whisper-like names; the scale is taken from the context width (d_context // num_heads):
right when d_context == d_model, wrong when they differ."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: int | None = None, dropout: float = 0.0) -> None:
        super().__init__()
        d_context = d_context or d_model
        self.n_head = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.scale = (d_context // num_heads) ** -0.5
        self.dropout = dropout

    def forward(self, x: torch.Tensor, context: torch.Tensor, context_mask: torch.Tensor | None = None) -> torch.Tensor:
        n_batch, n_ctx, n_state = x.shape
        q = self.q_proj(x).view(n_batch, n_ctx, self.n_head, -1).permute(0, 2, 1, 3)
        k = self.k_proj(context).view(n_batch, context.shape[1], self.n_head, -1).permute(0, 2, 3, 1)
        v = self.v_proj(context).view(n_batch, context.shape[1], self.n_head, -1).permute(0, 2, 1, 3)
        qk = (q @ k) * self.scale  # (B, H, T, S)
        if context_mask is not None:
            qk = qk.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        w = F.dropout(F.softmax(qk.float(), dim=-1).to(q.dtype), self.dropout, self.training)
        return self.o_proj((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))
# bug-line: 21
