# attnprep: mqa
# expect: wrong_output
# diagnosis: scale_d_model
"""Karpathy's nanochat naming: c_q / c_k / c_v / c_proj, n_embd / n_head / n_kv_head (here one KV
head), the KV head broadcast by expand before the matmuls, a `GPTConfig`-like dataclass, the scale
kept on the module as `self.scale`."""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    n_embd: int
    n_head: int
    n_kv_head: int = 1
    dropout: float = 0.0


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        config = GPTConfig(n_embd=d_model, n_head=num_heads, dropout=dropout)
        self.n_head = config.n_head
        self.n_kv_head = config.n_kv_head
        self.n_embd = config.n_embd
        self.head_dim = self.n_embd // self.n_head
        self.scale = self.n_embd ** -0.5
        self.c_q = nn.Linear(self.n_embd, self.n_head * self.head_dim)
        self.c_k = nn.Linear(self.n_embd, self.n_kv_head * self.head_dim)
        self.c_v = nn.Linear(self.n_embd, self.n_kv_head * self.head_dim)
        self.c_proj = nn.Linear(self.n_embd, self.n_embd)
        self.attn_dropout = config.dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.size()
        q = self.c_q(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.c_k(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.c_v(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        k = k.expand(B, self.n_head, T, self.head_dim)
        v = v.expand(B, self.n_head, T, self.head_dim)
        att = (q @ k.transpose(-2, -1)) * self.scale
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask.view(B, 1, 1, T)
        if is_causal:
            keep = keep & torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        att = att.masked_fill(~keep, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = F.dropout(att, p=self.attn_dropout, training=self.training)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)
# bug-line: 30
