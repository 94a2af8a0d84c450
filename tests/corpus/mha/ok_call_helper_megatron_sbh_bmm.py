# attnprep: mha
# expect: passed
"""Correct: Megatron habits: the input transposed at the edge to [s, b, h], a helper object (not a
Module) with __call__ instead of forward doing the core attention on [s, b, np, hn], heads folded
into the batch for torch.baddbmm(beta=0, alpha=1/norm_factor) and torch.bmm, transposed back at the end."""

import math

import torch
import torch.nn as nn


class CoreAttention:
    def __init__(self, num_heads, head_dim):
        self.np, self.hn = num_heads, head_dim
        self.norm_factor = math.sqrt(head_dim)

    def __call__(self, query_layer, key_layer, value_layer, keep):
        sq, b, np_, hn = query_layer.shape
        sk = key_layer.size(0)
        q = query_layer.reshape(sq, b * np_, hn).transpose(0, 1)  # [b*np, sq, hn]
        k = key_layer.reshape(sk, b * np_, hn).transpose(0, 1)
        v = value_layer.reshape(sk, b * np_, hn).transpose(0, 1)
        buf = torch.empty(b * np_, sq, sk, dtype=q.dtype, device=q.device)
        scores = torch.baddbmm(buf, q, k.transpose(1, 2), beta=0.0, alpha=1.0 / self.norm_factor)
        scores = scores.view(b, np_, sq, sk).masked_fill(~keep, -10000.0 * 1e5)
        probs = torch.nn.functional.softmax(scores, dim=-1).view(b * np_, sq, sk)
        ctx = torch.bmm(probs, v)  # [b*np, sq, hn]
        ctx = ctx.view(b, np_, sq, hn).permute(2, 0, 1, 3).reshape(sq, b, np_ * hn)
        return ctx


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.linear_q = nn.Linear(d_model, d_model)
        self.linear_k = nn.Linear(d_model, d_model)
        self.linear_v = nn.Linear(d_model, d_model)
        self.linear_proj = nn.Linear(d_model, d_model)
        self.core_attention = CoreAttention(num_heads, self.d)

    def forward(self, x, attention_mask=None, is_causal=False):
        hidden = x.transpose(0, 1).contiguous()  # [s, b, h]
        s, b, _ = hidden.shape
        q = self.linear_q(hidden).view(s, b, self.h, self.d)
        k = self.linear_k(hidden).view(s, b, self.h, self.d)
        v = self.linear_v(hidden).view(s, b, self.h, self.d)
        keep = torch.ones(b, 1, s, s, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep & torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        ctx = self.core_attention(q, k, v, keep)
        return self.linear_proj(ctx).transpose(0, 1)
