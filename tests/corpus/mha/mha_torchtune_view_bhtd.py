# attnprep: mha
# expect: wrong_output
# diagnosis: split_heads_no_transpose
"""torchtune-style names (bsz, seq_len, embed_dim), type hints: q, k, v viewed straight to
(b, n_heads, s, h_d) from (b, s, embed_dim), with no transpose."""
import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = dropout

    def forward(self, x: torch.Tensor, attention_mask: Optional[torch.Tensor] = None, is_causal: bool = False) -> torch.Tensor:
        b, s_x, embed_dim = x.shape
        q = self.q_proj(x).view(b, self.num_heads, s_x, self.head_dim)
        k = self.k_proj(x).view(b, self.num_heads, s_x, self.head_dim)
        v = self.v_proj(x).view(b, self.num_heads, s_x, self.head_dim)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            causal = torch.ones(s_x, s_x, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~causal, float("-inf"))
        attn = F.dropout(F.softmax(scores, dim=-1), p=self.attn_dropout, training=self.training)
        out = torch.matmul(attn, v).transpose(1, 2).contiguous().view(b, s_x, embed_dim)
        return self.o_proj(out)
