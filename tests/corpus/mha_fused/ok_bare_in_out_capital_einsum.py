# attnprep: mha_fused
# expect: passed
"""Correct: fused weight kept (in, 3*out) as a bare parameter (x @ W + b), einsum with capital subscripts."""
import math
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.heads = num_heads
        self.W_qkv = nn.Parameter(torch.empty(d_model, 3 * d_model))
        self.b_qkv = nn.Parameter(torch.zeros(3 * d_model))
        self.W_o = nn.Parameter(torch.empty(d_model, d_model))
        self.b_o = nn.Parameter(torch.zeros(d_model))
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.W_qkv)
        nn.init.xavier_uniform_(self.W_o)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H = self.heads
        qkv = (x @ self.W_qkv + self.b_qkv).view(B, T, 3, H, C // H)
        q, k, v = qkv.unbind(dim=2)                        # (B, T, H, D)
        S = torch.einsum("BQHD,BKHD->BHQK", q, k) * (1.0 / math.sqrt(C // H))
        if attention_mask is not None:
            S = S.masked_fill(~attention_mask[:, None, None], float("-inf"))
        if is_causal:
            S = S.masked_fill(torch.ones_like(S, dtype=torch.bool).triu(diagonal=1), float("-inf"))
        A = torch.softmax(S, dim=3)
        Y = torch.einsum("BHQK,BKHD->BQHD", A, v).flatten(2)
        return Y @ self.W_o + self.b_o
