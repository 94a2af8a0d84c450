# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""Mistral-style module with Chinese comments; its repeat_kv tiles the KV heads with .repeat(1, n_rep, 1, 1)
(heads 0, 1, 0, 1 …) where consecutive query heads must share one KV head (0, 0, 1, 1 …)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(B, G, T, D) -> (B, G * n_rep, T, D)"""
    if n_rep == 1:
        return hidden_states
    return hidden_states.repeat(1, n_rep, 1, 1)  # 每个 KV 头复制 n_rep 份


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads  # 每组共享一个 KV 头
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)
        self.dropout = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.shape
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)
        # 注意力分数 (B, H, T, T)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.zeros(q_len, q_len, dtype=scores.dtype, device=x.device)
        if is_causal:  # 上三角（不含对角线）屏蔽
            future = torch.triu(torch.ones(q_len, q_len, dtype=torch.bool, device=x.device), 1)
            mask = mask.masked_fill(future, float("-inf"))
        mask = mask[None, None]
        if attention_mask is not None:  # padding 的 key 屏蔽
            mask = mask.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        scores = scores + mask
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        probs = F.dropout(probs, p=self.dropout, training=self.training)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out)
# bug-line: 18
