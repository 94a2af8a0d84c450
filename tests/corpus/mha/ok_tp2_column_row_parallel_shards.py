# attnprep: mha
# expect: passed
"""Megatron tensor parallelism simulated on one device: q/k/v column-parallel (two shards, each
holding half of the heads), o row-parallel (two shards over its input columns, summed, bias once)."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

TP = 2


class ColumnParallelLinear(nn.Module):
    def __init__(self, d_in, d_out, tp=TP):
        super().__init__()
        self.shards = nn.ModuleList(nn.Linear(d_in, d_out // tp) for _ in range(tp))

    def forward(self, x):
        return [s(x) for s in self.shards]  # one output per rank


class RowParallelLinear(nn.Module):
    def __init__(self, d_in, d_out, tp=TP):
        super().__init__()
        self.shards = nn.ModuleList(nn.Linear(d_in // tp, d_out, bias=False) for _ in range(tp))
        self.bias = nn.Parameter(torch.zeros(d_out))

    def forward(self, parts):
        return sum(s(p) for s, p in zip(self.shards, parts)) + self.bias  # all-reduce


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        tp = TP if num_heads % TP == 0 else 1  # each rank holds whole heads
        self.h_local = num_heads // tp
        self.d = d_model // num_heads
        self.q_proj = ColumnParallelLinear(d_model, d_model, tp)
        self.k_proj = ColumnParallelLinear(d_model, d_model, tp)
        self.v_proj = ColumnParallelLinear(d_model, d_model, tp)
        self.o_proj = RowParallelLinear(d_model, d_model, tp)
        self.p = dropout

    def _rank(self, q, k, v, attention_mask, is_causal):
        B, T, _ = q.shape
        q, k, v = (t.view(B, T, self.h_local, self.d).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], -1e9)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), -1e9)
        a = F.dropout(s.softmax(-1), self.p, self.training)
        return (a @ v).transpose(1, 2).reshape(B, T, -1)

    def forward(self, x, attention_mask=None, is_causal=False):
        qs, ks, vs = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        outs = [self._rank(q, k, v, attention_mask, is_causal) for q, k, v in zip(qs, ks, vs)]
        return self.o_proj(outs)
