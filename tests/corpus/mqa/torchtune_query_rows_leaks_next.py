# attnprep: mqa
# expect: mask_leak
# diagnosis: causal_leaks_next + padding_mask_on_queries
"""torchtune-flavoured MQA (one shared k/v head, expand) with two mistakes: the padding mask on the query rows AND the causal mask tril(diagonal=1) (one future key visible)."""

import math

import torch
from torch import nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, self.head_dim, bias=False)
        self.output_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        b, s_x, _ = x.shape
        q = self.q_proj(x).view(b, s_x, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s_x, 1, self.head_dim).transpose(1, 2).expand(b, self.num_heads, s_x, self.head_dim)
        v = self.v_proj(x).view(b, s_x, 1, self.head_dim).transpose(1, 2).expand(b, self.num_heads, s_x, self.head_dim)
        attn = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        mask = torch.ones(b, 1, s_x, s_x, dtype=torch.bool, device=x.device)
        if is_causal:
            mask = mask & torch.tril(torch.ones(s_x, s_x, dtype=torch.bool, device=x.device), diagonal=1)
        if attention_mask is not None:
            mask = mask & attention_mask.bool()[:, None, :, None]
        attn = attn.masked_fill(~mask, -1e9).softmax(-1)
        out = (attn @ v).transpose(1, 2).reshape(b, s_x, -1)
        return self.output_proj(out)
# bug-line: 29, 31
