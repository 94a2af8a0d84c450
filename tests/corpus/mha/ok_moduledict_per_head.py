# attnprep: mha
# expect: passed
"""One ModuleDict per head ("head_0" -> {q, k, v}), each Linear(d_model, head_dim); out is one Linear."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        hd = d_model // num_heads
        self.heads = nn.ModuleDict({
            f"head_{i}": nn.ModuleDict({n: nn.Linear(d_model, hd) for n in ("q", "k", "v")})
            for i in range(num_heads)
        })
        self.out = nn.Linear(d_model, d_model)
        self.hd = hd
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        T = x.shape[1]
        outs = []
        for name, head in self.heads.items():
            q, k, v = head["q"](x), head["k"](x), head["v"](x)  # (B, T, hd)
            s = q @ k.transpose(-1, -2) / math.sqrt(self.hd)  # (B, T, T)
            if attention_mask is not None:
                s = s.masked_fill(~attention_mask[:, None, :], float("-inf"))
            if is_causal:
                s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), float("-inf"))
            outs.append(self.dropout(F.softmax(s, -1)) @ v)
        return self.out(torch.cat(outs, dim=-1))
