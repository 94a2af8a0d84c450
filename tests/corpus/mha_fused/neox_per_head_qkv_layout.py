# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""GPT-NeoX-style fused projection read per head, view(B, T, H, 3 * D) then chunked, where this
exercise's qkv_proj lays its outputs out [q; k; v], each d_model wide."""

import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_attention_heads = num_heads
        self.head_size = d_model // num_heads
        self.norm_factor = math.sqrt(self.head_size)
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, hidden_states, attention_mask=None, is_causal=False):
        B, T, C = hidden_states.shape
        qkv = self.qkv_proj(hidden_states)
        qkv = qkv.view(B, T, self.num_attention_heads, 3 * self.head_size)
        query, key, value = qkv.permute(0, 2, 1, 3).chunk(3, dim=-1)

        attn_scores = torch.matmul(query, key.transpose(-1, -2)) / self.norm_factor
        if attention_mask is not None:
            attn_scores = attn_scores.masked_fill(~attention_mask[:, None, None, :], torch.finfo(attn_scores.dtype).min)
        if is_causal:
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=hidden_states.device))
            attn_scores = attn_scores.masked_fill(~causal, torch.finfo(attn_scores.dtype).min)
        attn_weights = self.attention_dropout(attn_scores.softmax(dim=-1))
        attn_output = torch.matmul(attn_weights, value)
        attn_output = attn_output.permute(0, 2, 1, 3).reshape(B, T, C)
        return self.o_proj(attn_output)
# bug-line: 26
