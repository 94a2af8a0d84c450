# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""Baichuan-7B style (W_pack-free variant, _prepare_attn_mask building a (B, 1, T, T) float mask); the
padding mask is expanded as [:, None, :, None], i.e. it blocks query rows instead of key columns."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        shape = (bsz, q_len, self.num_heads, self.head_dim)
        query_states = self.q_proj(x).view(shape).transpose(1, 2)
        key_states = self.k_proj(x).view(shape).transpose(1, 2)
        value_states = self.v_proj(x).view(shape).transpose(1, 2)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.zeros(bsz, 1, q_len, q_len, dtype=x.dtype, device=x.device)
        if attention_mask is not None:
            pad = ~attention_mask[:, None, :, None]
            mask = mask.masked_fill(pad, torch.finfo(x.dtype).min)
        if is_causal:
            causal = torch.full((q_len, q_len), torch.finfo(x.dtype).min, device=x.device).triu(1)
            mask = mask + causal
        attn_weights = attn_weights + mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)
# bug-line: 33
