# attnprep: gqa
# expect: passed
"""One module per KV group: its own q Linear(d, G·D) and k, v Linear(d, D); o_proj shared."""
import math
import torch
import torch.nn as nn


class KVGroup(nn.Module):
    def __init__(self, d_model, group, head_dim):
        super().__init__()
        self.q = nn.Linear(d_model, group * head_dim)
        self.k = nn.Linear(d_model, head_dim)
        self.v = nn.Linear(d_model, head_dim)
        self.group, self.head_dim = group, head_dim

    def forward(self, x, bias):
        B, T, _ = x.shape
        q = self.q(x).view(B, T, self.group, self.head_dim).transpose(1, 2)  # (B, G, T, D)
        k = self.k(x).unsqueeze(1)  # (B, 1, T, D)
        v = self.v(x).unsqueeze(1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + bias
        return (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)  # (B, T, G*D)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        hd = d_model // num_heads
        self.groups = nn.ModuleList(KVGroup(d_model, num_heads // num_kv_heads, hd) for _ in range(num_kv_heads))
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        bias = torch.zeros(B, 1, T, T, dtype=x.dtype, device=x.device)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        return self.o_proj(torch.cat([g(x, bias) for g in self.groups], dim=-1))
