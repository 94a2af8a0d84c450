# attnprep: mqa
# expect: passed
"""A flax-style functional core ported to torch: a pure `attend(params, x, mask)` over a dict of weights,
the module only holds the parameters; one KV head broadcast with None-indexing: correct."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _dense(p, x):
    return F.linear(x, p.weight, p.bias)


def attend(params, x, allowed, num_heads):
    B, T, C = x.shape
    D = C // num_heads
    q = _dense(params["q_proj"], x).reshape(B, T, num_heads, D).permute(0, 2, 1, 3)  # (B, H, T, D)
    k = _dense(params["k_proj"], x)[:, None]  # (B, 1, T, D)
    v = _dense(params["v_proj"], x)[:, None]
    logits = q @ k.transpose(-1, -2) / math.sqrt(D)
    logits = torch.where(allowed, logits, torch.tensor(float("-inf"), dtype=logits.dtype, device=x.device))
    y = logits.softmax(-1) @ v  # (B, H, T, D)
    return _dense(params["o_proj"], y.permute(0, 2, 1, 3).reshape(B, T, C))


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.params = nn.ModuleDict({
            "q_proj": nn.Linear(d_model, d_model),
            "k_proj": nn.Linear(d_model, d_model // num_heads),
            "v_proj": nn.Linear(d_model, d_model // num_heads),
            "o_proj": nn.Linear(d_model, d_model),
        })

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        allowed = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        if is_causal:
            allowed = allowed & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        return attend(self.params, x, allowed, self.num_heads)
