# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""Buggy: KV heads tiled with repeat instead of grouped; the repeat_kv + score step is a TorchScript function (torch.jit.script of a plain function)
kept as an attribute of the module, self.attend, the way a module picks its kernel at construction."""
import math
from typing import Optional
import torch
import torch.nn as nn


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_rep: int, bias: torch.Tensor) -> torch.Tensor:
    k = k.repeat(1, n_rep, 1, 1)
    v = v.repeat(1, n_rep, 1, 1)
    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1)) + bias
    return torch.matmul(torch.softmax(s, dim=-1), v)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h, self.kv, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attend = torch.jit.script(_attend)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        bias = torch.zeros(B, 1, T, T, dtype=x.dtype, device=x.device)
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        o = self.attend(q, k, v, self.h // self.kv, bias)
        return self.o_proj(o.transpose(1, 2).reshape(B, T, C))
# bug-line: 13, 14
