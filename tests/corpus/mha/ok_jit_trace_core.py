# attnprep: mha
# expect: passed
"""Correct: the score/softmax core is a torch.jit.trace'd function (traced once on an example in
__init__, as export-minded code does); masks are handed in as an additive float bias."""
import math
import torch
import torch.nn as nn


def _core(q, k, v, bias):
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + bias
    return torch.matmul(torch.softmax(s, dim=-1), v)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        ex = torch.randn(1, 1, 2, d_model // num_heads)
        self.core = torch.jit.trace(_core, (ex, ex, ex, torch.zeros(1, 1, 2, 2)), check_trace=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        sp = lambda t: t.view(B, T, self.h, C // self.h).permute(0, 2, 1, 3)  # noqa: E731
        bias = x.new_zeros(B, 1, T, T)
        if is_causal:
            bias.masked_fill_(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            bias.masked_fill_(~attention_mask[:, None, None, :], float("-inf"))
        o = self.core(sp(self.q_proj(x)), sp(self.k_proj(x)), sp(self.v_proj(x)), bias)
        return self.o_proj(o.permute(0, 2, 1, 3).reshape(B, T, C))
