# attnprep: qknorm
# expect: wrong_output
# diagnosis: split_heads_no_transpose
"""Written by `attnprep dev corpus qknorm`: the reference with the edit of split_heads_no_transpose."""
"""Multi-head attention with QK-norm (OLMo-2, Qwen3, Gemma-3).

As plain multi-head attention, but each head's query and key are RMS-normalised over head_dim
(a learned weight per channel, shared by the heads) right after the head split, before the scores.
This bounds the attention logits and keeps long training runs from logit blow-ups; the scores are
still scaled by 1 / sqrt(head_dim).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight over the last dim (no mean subtraction, no bias)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class QKNormAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.q_norm = RMSNorm(self.head_dim)  # per head, over head_dim
        self.k_norm = RMSNorm(self.head_dim)
        self.dropout = nn.Dropout(dropout)  # on the attention probabilities; eval() turns it off

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False
    ) -> torch.Tensor:
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim

        q = self.q_norm(self.q_proj(x).view(B, H, T, D))  # (B, H, T, D), each head normed
        k = self.k_norm(self.k_proj(x).view(B, H, T, D))  # (B, H, T, D), each head normed
        v = self.v_proj(x).view(B, H, T, D)  # (B, H, T, D)

        scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)
        if attention_mask is not None:  # (B, T), True = real token: padded keys get no attention
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))  # (B, 1, 1, T)
        if is_causal:  # query i sees keys j <= i
            allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))  # (T, T)
            scores = scores.masked_fill(~allowed, float("-inf"))
        attn = F.softmax(scores, dim=-1)  # (B, H, T, T), each row sums to 1 over the keys
        attn = self.dropout(attn)

        out = attn @ v  # (B, H, T, T) @ (B, H, T, D) -> (B, H, T, D)
        out = out.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, H, D) -> (B, T, C)
        return self.o_proj(out)  # (B, T, C)
