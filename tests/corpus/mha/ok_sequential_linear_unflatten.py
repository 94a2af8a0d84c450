# attnprep: mha
# expect: passed
"""Each projection is nn.Sequential(Linear, Unflatten(-1, (H, D))); the output one Flatten + Linear."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        D = d_model // num_heads
        mk = lambda: nn.Sequential(nn.Linear(d_model, d_model), nn.Unflatten(-1, (num_heads, D)))
        self.to_q, self.to_k, self.to_v = mk(), mk(), mk()
        self.to_out = nn.Sequential(nn.Flatten(-2), nn.Linear(d_model, d_model), nn.Dropout(dropout))
        self.scale = 1 / math.sqrt(D)

    def forward(self, x, attention_mask=None, is_causal=False):
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)  # (B, T, H, D)
        s = torch.einsum("bthd,bshd->bhts", q, k) * self.scale
        T = x.size(1)
        if attention_mask is not None:
            s = s.masked_fill(attention_mask[:, None, None, :].logical_not(), float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, device=x.device, dtype=torch.bool).triu(diagonal=1), float("-inf"))
        p = s.softmax(dim=-1)
        return self.to_out(torch.einsum("bhts,bshd->bthd", p, v))
