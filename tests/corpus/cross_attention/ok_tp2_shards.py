# attnprep: cross_attention
# expect: passed
"""Two tensor-parallel ranks simulated: each owns half the heads of q, k, v (column shards); the
output projection is a row shard per rank, summed, with one bias."""
import math
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0, tp=2):
        super().__init__()
        dc = d_context or d_model
        if num_heads % tp:
            tp = 1
        self.tp, self.hl, self.D = tp, num_heads // tp, d_model // num_heads
        w = self.hl * self.D
        self.q_shards = nn.ModuleList(nn.Linear(d_model, w) for _ in range(tp))
        self.k_shards = nn.ModuleList(nn.Linear(dc, w) for _ in range(tp))
        self.v_shards = nn.ModuleList(nn.Linear(dc, w) for _ in range(tp))
        self.o_shards = nn.ModuleList(nn.Linear(w, d_model, bias=False) for _ in range(tp))
        self.o_bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, context, context_mask=None):
        B, T, _ = x.shape
        S = context.shape[1]
        out = self.o_bias
        for r in range(self.tp):
            q = self.q_shards[r](x).view(B, T, self.hl, self.D).transpose(1, 2)
            k = self.k_shards[r](context).view(B, S, self.hl, self.D).transpose(1, 2)
            v = self.v_shards[r](context).view(B, S, self.hl, self.D).transpose(1, 2)
            s = q @ k.transpose(-1, -2) / math.sqrt(self.D)
            if context_mask is not None:
                s = s.masked_fill(~context_mask[:, None, None, :], float("-inf"))
            o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)
            out = out + self.o_shards[r](o)
        return out
