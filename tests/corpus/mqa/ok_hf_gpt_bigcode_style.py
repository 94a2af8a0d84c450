# attnprep: mqa
# expect: passed
"""Correct, HF GPTBigCode-like multi-query _attn: queries reshaped (B, T*H, D) against (B, T, D) keys with one bmm, finfo.min mask_value, upcast softmax, returns (out, weights)."""

import torch
from torch import nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.c_q = nn.Linear(d_model, d_model)
        self.c_k = nn.Linear(d_model, self.head_dim)
        self.c_v = nn.Linear(d_model, self.head_dim)
        self.c_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def _get_mask_value(self, device, dtype):
        return torch.full([], torch.finfo(dtype).min, dtype=dtype, device=device)

    def _attn(self, query, key, value, allowed):
        scale_factor = self.head_dim ** -0.5
        # query (B, T, H, D) -> (B, T*H, D): heads next to each other inside a token
        batch_size, query_length = query.shape[:2]
        query = query.reshape(batch_size, query_length * self.num_heads, self.head_dim)
        attn_weights = torch.bmm(query, key.transpose(1, 2)) * scale_factor    # (B, T*H, T)
        attn_weights = attn_weights.view(batch_size, query_length, self.num_heads, -1)
        if allowed is not None:
            attn_weights = torch.where(allowed, attn_weights, self._get_mask_value(attn_weights.device, attn_weights.dtype))
        attn_weights = nn.functional.softmax(attn_weights.float(), dim=-1).to(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        attn_output = torch.bmm(attn_weights.view(batch_size, query_length * self.num_heads, -1), value)
        return attn_output.view(batch_size, query_length, self.embed_dim), attn_weights

    def forward(self, hidden_states, attention_mask=None, is_causal=False):
        B, T, _ = hidden_states.shape
        query = self.c_q(hidden_states).view(B, T, self.num_heads, self.head_dim)
        key, value = self.c_k(hidden_states), self.c_v(hidden_states)
        allowed = None
        if is_causal:
            allowed = torch.ones(T, T, dtype=torch.bool, device=hidden_states.device).tril()[None, :, None, :]  # (1, T, 1, T)
        if attention_mask is not None:
            pad = attention_mask[:, None, None, :]
            allowed = pad if allowed is None else allowed & pad
        attn_output, attn_weights = self._attn(query, key, value, allowed)
        return self.c_proj(attn_output), attn_weights
