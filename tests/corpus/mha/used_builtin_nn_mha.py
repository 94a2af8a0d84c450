# attnprep: mha
# expect: used_builtin
# diagnosis: used_builtin
"""Keeps the contract's q/k/v/o projections but lets nn.MultiheadAttention do the attention."""

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)

    def forward(self, x, attention_mask=None, is_causal=False):
        T = x.shape[1]
        causal = None
        if is_causal:
            # True = not allowed to attend (PyTorch's convention, opposite of HF)
            causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        padding = ~attention_mask if attention_mask is not None else None
        out, _ = self.attn(
            self.q_proj(x), self.k_proj(x), self.v_proj(x),
            key_padding_mask=padding, attn_mask=causal, need_weights=False,
        )
        return self.o_proj(out)
