# attnprep: mha
# expect: passed
"""Correct, Hugging Face GPT-2 style written in mha: Conv1D layers store their weight as (in, out) and compute
x @ W + b; c_attn is the fused [q; k; v] projection, c_proj the output projection."""

import math

import torch
import torch.nn as nn


class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: a linear layer with the weight transposed."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_head = num_heads
        self.split_size = d_model
        self.c_attn = Conv1D(3 * d_model, d_model)
        self.c_proj = Conv1D(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def _split_heads(self, t):
        B, T, C = t.size()
        return t.view(B, T, self.n_head, C // self.n_head).permute(0, 2, 1, 3)  # (B, H, T, D)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        query, key, value = self.c_attn(x).split(self.split_size, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        w = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(value.size(-1))
        mask_value = torch.finfo(w.dtype).min
        if is_causal:
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            w = torch.where(causal, w, torch.full_like(w, mask_value))
        if attention_mask is not None:
            w = w + (1.0 - attention_mask[:, None, None, :].to(w.dtype)) * mask_value
        w = self.attn_dropout(nn.functional.softmax(w, dim=-1))
        a = torch.matmul(w, value).permute(0, 2, 1, 3).contiguous().view(B, T, C)
        return self.c_proj(a)
