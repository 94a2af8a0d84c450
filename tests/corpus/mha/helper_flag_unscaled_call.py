# attnprep: mha
# expect: wrong_output
# diagnosis: missing_scale
"""Small keyword-driven helpers shared by several attention variants of a codebase: `similarity(q, k,
temperature_scaled=...)` returns q·kᵀ, divided by sqrt(d) when asked. The helper is right; this
module's forward asks for it with temperature_scaled=False (copied from a variant that scales q
beforehand), so the scores reach the softmax unscaled."""

import math

import torch
import torch.nn as nn


def similarity(q, k, temperature_scaled=True):
    raw = torch.einsum("bhqd,bhkd->bhqk", q, k)
    return raw / math.sqrt(q.shape[-1]) if temperature_scaled else raw


def heads(t, n):
    return t.reshape(t.shape[0], t.shape[1], n, -1).transpose(1, 2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (heads(proj(x), self.n) for proj in (self.q_proj, self.k_proj, self.v_proj))
        sim = similarity(q, k, temperature_scaled=False)
        if attention_mask is not None:
            sim = sim.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            sim = sim.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        probs = self.dropout(sim.softmax(dim=-1))
        return self.o_proj(torch.einsum("bhqk,bhkd->bqhd", probs, v).reshape(B, T, C))
# bug-line: 37
