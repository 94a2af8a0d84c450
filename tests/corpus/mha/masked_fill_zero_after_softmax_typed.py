# attnprep: mha
# expect: mask_leak
# diagnosis: mask_after_softmax
"""Written after round 3's fixes: the padding and causal masks combined into one bool mask and
applied with masked_fill(…, 0.0) to the softmax's output."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.n_heads, self.d_head = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        B, T, C = x.shape
        split = lambda t: t.view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_head), dim=-1)
        blocked = torch.zeros(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            blocked = blocked | torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        attn = attn.masked_fill(blocked, 0.0)
        out = self.dropout(attn) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
# bug-line: 33
