# attnprep: gqa
# expect: passed
"""Correct: an inner scripted nn.Module (torch.jit.script of an instance) does the attention core."""
import math
from typing import Optional

import torch
import torch.nn as nn


class Core(nn.Module):
    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        k = torch.repeat_interleave(k, self.groups, dim=1)
        v = torch.repeat_interleave(v, self.groups, dim=1)
        s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(float(q.size(-1)))
        s = s.masked_fill(~keep, float("-inf"))
        return torch.matmul(torch.softmax(s, dim=-1), v)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.H, self.G = num_heads, num_kv_heads
        self.D = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.o_proj = nn.Linear(d_model, d_model)
        self.core = torch.jit.script(Core(num_heads // num_kv_heads))

    def forward(self, x, attention_mask: Optional[torch.Tensor] = None, is_causal: bool = False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.G, self.D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.G, self.D).transpose(1, 2)
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        y = self.core(q, k, v, keep)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))
