# attnprep: mha
# expect: passed
"""Megatron's skip_bias_add: each linear returns (x @ Wᵀ, bias) and the caller adds the bias late."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class BiasSkippingLinear(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_out, d_in))
        self.bias = nn.Parameter(torch.zeros(d_out))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def forward(self, x):
        return F.linear(x, self.weight), self.bias


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n = num_heads
        self.linear_q = BiasSkippingLinear(d_model, d_model)
        self.linear_k = BiasSkippingLinear(d_model, d_model)
        self.linear_v = BiasSkippingLinear(d_model, d_model)
        self.linear_proj = BiasSkippingLinear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        D = C // self.n
        heads = []
        for lin in (self.linear_q, self.linear_k, self.linear_v):
            y, b = lin(x)
            heads.append((y + b).unflatten(-1, (self.n, D)).transpose(1, 2))
        q, k, v = heads
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
        neg = torch.finfo(s.dtype).min
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask.view(B, 1, 1, T), neg)
        if is_causal:
            s = s.masked_fill(torch.arange(T, device=x.device)[None, :] > torch.arange(T, device=x.device)[:, None], neg)
        o = torch.matmul(s.softmax(-1), v).transpose(1, 2).flatten(2)
        y, b = self.linear_proj(o)
        return y + b
