# attnprep: mha
# expect: passed
"""Correct: bare parameters stored (in, out) with register_parameter and odd names, tensordot projections."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_head = num_heads
        for name in ("Wq_T", "Wk_T", "Wv_T", "Wo_T"):
            self.register_parameter(name, nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model)))
        for name in ("bq", "bk", "bv", "bo"):
            self.register_parameter(name, nn.Parameter(torch.zeros(d_model)))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H = self.n_head
        D = C // H
        q = torch.tensordot(x, self.Wq_T, dims=1) + self.bq
        k = torch.tensordot(x, self.Wk_T, dims=1) + self.bk
        v = torch.tensordot(x, self.Wv_T, dims=1) + self.bv
        q, k, v = (t.unflatten(-1, (H, D)).movedim(2, 1) for t in (q, k, v))
        scores = q.matmul(k.mT).div(D ** 0.5)
        neg = torch.finfo(scores.dtype).min
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask.view(B, 1, 1, T), neg)
        if is_causal:
            future = torch.ones(T, T, device=x.device, dtype=torch.bool).triu(1)
            scores = scores.masked_fill(future, neg)
        w = scores.softmax(-1)
        y = (w @ v).movedim(1, 2).flatten(-2)
        return torch.tensordot(y, self.Wo_T, dims=1) + self.bo
