"""Multi-head cross-attention (the encoder-decoder attention of "Attention Is All You Need").

The queries come from the decoder's sequence x; the keys and values come from another sequence,
the context (the encoder's output, an image's patches, a prompt's embeddings), which may have its
own length S and width d_context. Each of the T queries takes a weighted mix of the S context
tokens: softmax(q·kᵀ / sqrt(head_dim))·v per head. Padded context tokens are masked as keys; there
is no causal mask, since the whole context is known before the first query is computed.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: int | None = None, dropout: float = 0.0):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        d_context = d_model if d_context is None else d_context
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)  # from x
        self.k_proj = nn.Linear(d_context, d_model)  # from the context
        self.v_proj = nn.Linear(d_context, d_model)  # from the context
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)  # on the attention probabilities; eval() turns it off

    def forward(
        self, x: torch.Tensor, context: torch.Tensor, context_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        B, T, C = x.shape
        S = context.shape[1]
        H, D = self.num_heads, self.head_dim

        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(context).view(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
        v = self.v_proj(context).view(B, S, H, D).transpose(1, 2)  # (B, H, S, D)

        scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, D) @ (B, H, D, S) -> (B, H, T, S)
        if context_mask is not None:  # (B, S), True = real token: padded context tokens get no attention
            scores = scores.masked_fill(~context_mask[:, None, None, :], float("-inf"))  # (B, 1, 1, S)
        attn = F.softmax(scores, dim=-1)  # (B, H, T, S), each query's row sums to 1 over the context
        attn = self.dropout(attn)

        out = attn @ v  # (B, H, T, S) @ (B, H, S, D) -> (B, H, T, D)
        out = out.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, H, D) -> (B, T, C)
        return self.o_proj(out)  # (B, T, C)
