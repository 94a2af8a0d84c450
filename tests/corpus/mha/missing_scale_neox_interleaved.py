# attnprep: mha
# expect: wrong_output
# diagnosis: missing_scale
"""No 1/sqrt(head_size) on the scores, GPT-NeoX / Falcon style: one query_key_value layer laid out per head ([q_h; k_h; v_h]),
read with view(B, T, H, 3 * D).split(D, dim=-1). In mha the fused layout is the writer's choice:
the grader tries the layouts and keeps the one under which the mistake is named."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_size = d_model // num_heads
        self.query_key_value = nn.Linear(d_model, 3 * d_model)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = self.query_key_value(x).view(B, T, self.num_heads, 3 * self.head_size)
        q, k, v = qkv.permute(0, 2, 1, 3).split(self.head_size, dim=-1)  # each (B, H, T, D)
        scores = torch.matmul(q, k.transpose(-1, -2))
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed.tril()
        allowed = allowed[None, None]
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :].bool()
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        probs = self.attention_dropout(torch.softmax(scores, dim=-1))
        out = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.dense(out)
