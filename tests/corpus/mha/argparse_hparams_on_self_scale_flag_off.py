# attnprep: mha
# expect: wrong_output
# diagnosis: missing_scale
"""Lightning-era hyper-parameters: an argparse.Namespace kept on the module as self.hparams, the
steps switched by its flags (`scale_scores`, `attn_dropout`), the heads by einsum strings."""
import argparse
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.hparams = argparse.Namespace(d_model=d_model, n_heads=num_heads, attn_dropout=dropout,
                                          scale_scores=False)
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.hparams.n_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D)
        k = self.k_proj(x).view(B, T, H, D)
        v = self.v_proj(x).view(B, T, H, D)
        scores = torch.einsum("bthd,bshd->bhts", q, k)
        if self.hparams.scale_scores:
            scores = scores / math.sqrt(D)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        probs = self.dropout(scores.softmax(dim=-1))
        out = torch.einsum("bhts,bshd->bthd", probs, v).reshape(B, T, C)
        return self.o_proj(out)
# bug-line: 17
