# attnprep: mha
# expect: passed
"""Correct: projections kept as per-head stacks, q/k/v weights (H, D, d_model) and the output
weight (H, D, d_model) used as einsum('bhtd,hdc->btc'), biases (H, D) and (d_model,)."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        def w(*shape):
            return nn.Parameter(torch.randn(*shape) / math.sqrt(d_model))
        self.Wq, self.Wk, self.Wv = w(num_heads, self.d, d_model), w(num_heads, self.d, d_model), w(num_heads, self.d, d_model)
        self.bq, self.bk, self.bv = w(num_heads, self.d), w(num_heads, self.d), w(num_heads, self.d)
        self.Wo = w(num_heads, self.d, d_model)   # out = sum_h o_h @ Wo[h]
        self.bo = w(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        q = torch.einsum("btc,hdc->bhtd", x, self.Wq) + self.bq[:, None]
        k = torch.einsum("btc,hdc->bhtd", x, self.Wk) + self.bk[:, None]
        v = torch.einsum("btc,hdc->bhtd", x, self.Wv) + self.bv[:, None]
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d)
        T = x.shape[1]
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).tril_().logical_not(), -torch.inf)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], -torch.inf)
        p = self.drop(s.softmax(-1))
        o = torch.einsum("bhqk,bhkd->bhqd", p, v)
        return torch.einsum("bhtd,hdc->btc", o, self.Wo) + self.bo
