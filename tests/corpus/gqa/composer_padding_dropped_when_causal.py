# attnprep: gqa
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""MosaicML Composer / llm-foundry's attn_bias habit: one additive bias built by an if / elif chain;
with is_causal the causal bias is built and the key padding mask is never reached, so the padding
is ignored only in the causal cases (the non-causal padded cases are right)."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.n_heads, self.kv_n_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_pdrop = dropout

    def _attn_bias(self, T, key_padding_mask, is_causal, device, dtype):
        attn_bias = torch.zeros(1, 1, T, T, device=device, dtype=dtype)
        min_val = torch.finfo(dtype).min
        if is_causal:
            causal = torch.ones(T, T, dtype=torch.bool, device=device).tril()
            attn_bias = attn_bias.masked_fill(~causal.view(1, 1, T, T), min_val)
        elif key_padding_mask is not None:
            attn_bias = attn_bias.masked_fill(~key_padding_mask.view(-1, 1, 1, T), min_val)
        return attn_bias

    def forward(self, x, attention_mask=None, is_causal=False):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_n_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_n_heads, self.head_dim).transpose(1, 2)
        k = k.repeat_interleave(self.n_heads // self.kv_n_heads, dim=1)
        v = v.repeat_interleave(self.n_heads // self.kv_n_heads, dim=1)
        attn_weight = q.matmul(k.transpose(-1, -2)) * (1 / math.sqrt(self.head_dim))
        attn_weight = attn_weight + self._attn_bias(s, attention_mask, is_causal, x.device, attn_weight.dtype)
        attn_weight = torch.softmax(attn_weight, dim=-1)
        attn_weight = nn.functional.dropout(attn_weight, p=self.attn_pdrop, training=self.training)
        out = attn_weight.matmul(v)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, -1))
# bug-line: 31
