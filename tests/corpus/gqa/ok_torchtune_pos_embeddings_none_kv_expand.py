# attnprep: gqa
# expect: passed
"""Correct: torchtune's MultiHeadAttention shape: constructor-injected q_proj / k_proj / v_proj /
output_proj modules, pos_embeddings=None, q_norm=None, is_causal passed, k and v viewed (b, s,
n_kv_heads, 1, head_dim) and expanded to (b, s, n_kv_heads, q_per_kv, head_dim) before the head
transpose, built by a component builder function."""

import math
from typing import Optional

import torch
import torch.nn as nn


class _MultiHeadAttention(nn.Module):
    def __init__(self, *, embed_dim, num_heads, num_kv_heads, head_dim, q_proj, k_proj, v_proj, output_proj,
                 pos_embeddings: Optional[nn.Module] = None, q_norm: Optional[nn.Module] = None,
                 k_norm: Optional[nn.Module] = None, attn_dropout: float = 0.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.embed_dim, self.head_dim = num_heads, num_kv_heads, embed_dim, head_dim
        self.q_proj, self.k_proj, self.v_proj, self.output_proj = q_proj, k_proj, v_proj, output_proj
        self.pos_embeddings, self.q_norm, self.k_norm = pos_embeddings, q_norm, k_norm
        self.attn_dropout = attn_dropout

    def forward(self, x, y=None, *, mask=None, input_pos=None):
        b, s_x, _ = x.shape
        y = x if y is None else y
        s_y = y.shape[1]
        q = self.q_proj(x).view(b, s_x, self.num_heads, self.head_dim)
        if self.pos_embeddings is not None:
            q = self.pos_embeddings(q, input_pos=input_pos)
        q = q.transpose(1, 2)
        if self.q_norm is not None:
            q = self.q_norm(q)
        q_per_kv = self.num_heads // self.num_kv_heads
        k = self.k_proj(y).view(b, s_y, self.num_kv_heads, 1, self.head_dim)
        v = self.v_proj(y).view(b, s_y, self.num_kv_heads, 1, self.head_dim)
        if self.num_heads != self.num_kv_heads:
            k = k.expand(b, s_y, self.num_kv_heads, q_per_kv, self.head_dim)
            v = v.expand(b, s_y, self.num_kv_heads, q_per_kv, self.head_dim)
        k = k.reshape(b, s_y, -1, self.head_dim).transpose(1, 2)
        v = v.reshape(b, s_y, -1, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if mask is not None:  # True = may attend, torchtune's convention
            scores = scores.masked_fill(~mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.output_proj(out.transpose(1, 2).contiguous().view(b, s_x, -1))


def gqa_component(d_model, num_heads, num_kv_heads):
    hd = d_model // num_heads
    return _MultiHeadAttention(
        embed_dim=d_model, num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=hd,
        q_proj=nn.Linear(d_model, num_heads * hd), k_proj=nn.Linear(d_model, num_kv_heads * hd),
        v_proj=nn.Linear(d_model, num_kv_heads * hd), output_proj=nn.Linear(d_model, d_model))


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.attn = gqa_component(d_model, num_heads, num_kv_heads)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        mask = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            mask = mask & torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]
        return self.attn(x, mask=mask)
