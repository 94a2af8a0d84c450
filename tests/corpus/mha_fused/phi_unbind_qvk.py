# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_split_order
"""Phi-style Wqkv viewed (B, T, 3, H, D) and unbound as q, v, k: the k and v thirds swapped. einsum
scores with the scale folded into k, additive -10000 masks."""

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.n_head = num_heads
        self.head_dim = d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)
        self.softmax_scale = self.head_dim**-0.5

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = self.qkv_proj(x).view(B, T, 3, self.n_head, self.head_dim)
        q, v, k = qkv.unbind(dim=2)  # (B, T, H, D) each
        scores = torch.einsum("bthd,bshd->bhts", q, k * self.softmax_scale)
        if is_causal:
            causal_mask = torch.triu(torch.full((T, T), -10000.0, device=scores.device), 1)
            scores = scores + causal_mask.to(dtype=scores.dtype)
        if attention_mask is not None:
            padding_mask = torch.full((B, T), -10000.0, dtype=scores.dtype, device=scores.device)
            padding_mask.masked_fill_(attention_mask, 0.0)
            scores = scores + padding_mask[:, None, None, :]
        attention = torch.softmax(scores, dim=-1)
        attention = self.drop(attention)
        output = torch.einsum("bhts,bshd->bthd", attention, v)
        return self.o_proj(output.reshape(B, T, C))
# bug-line: 24
