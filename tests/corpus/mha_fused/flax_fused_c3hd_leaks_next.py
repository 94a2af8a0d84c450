# attnprep: mha_fused
# expect: mask_leak
# diagnosis: causal_leaks_next
# The mistake: triu(2) leaves the next token (j = i + 1) visible.
# A Flax port: one DenseGeneral(features=(3, H, D)) whose kernel is (d_model, 3, H, D) with a (3, H, D)
# bias, the output DenseGeneral(axis=(-2, -1)) kernel (H, D, d_model) with a (d_model,) bias.
import math
import torch
import torch.nn as nn


class DenseGeneral(nn.Module):
    def __init__(self, in_shape, features):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(*in_shape, *features) / math.sqrt(math.prod(in_shape)))
        self.bias = nn.Parameter(torch.zeros(*features))
        self.n_in = len(in_shape)

    def forward(self, x):
        dims = list(range(x.dim() - self.n_in, x.dim()))
        return torch.tensordot(x, self.kernel, dims=(dims, list(range(self.n_in)))) + self.bias


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.qkv = DenseGeneral((d_model,), (3, num_heads, self.d))
        self.out = DenseGeneral((num_heads, self.d), (d_model,))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = self.qkv(x).unbind(2)  # each (B, T, H, D)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.d)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(2), float("-inf"))
        p = self.dropout(s.softmax(-1))
        return self.out(torch.einsum("bhqk,bkhd->bqhd", p, v))
# bug-line: 39
