# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""baddbmm over (B*H, T, D) with alpha = 1/sqrt(embed_dim) instead of 1/sqrt(head_dim)."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, tgt_len, _ = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(x).view(bsz, tgt_len, H, D).transpose(1, 2).reshape(bsz * H, tgt_len, D)
        k = self.k_proj(x).view(bsz, tgt_len, H, D).transpose(1, 2).reshape(bsz * H, tgt_len, D)
        v = self.v_proj(x).view(bsz, tgt_len, H, D).transpose(1, 2).reshape(bsz * H, tgt_len, D)
        bias = torch.zeros(bsz, 1, tgt_len, tgt_len, device=x.device, dtype=x.dtype)
        if is_causal:
            bias = bias.masked_fill(torch.ones(tgt_len, tgt_len, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        bias = bias.expand(bsz, H, tgt_len, tgt_len).reshape(bsz * H, tgt_len, tgt_len)
        attn_weights = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=1.0 / math.sqrt(self.embed_dim))
        attn_probs = self.dropout(attn_weights.softmax(dim=-1))
        attn_output = torch.bmm(attn_probs, v)
        attn_output = attn_output.view(bsz, H, tgt_len, D).transpose(1, 2).reshape(bsz, tgt_len, self.embed_dim)
        return self.out_proj(attn_output)
