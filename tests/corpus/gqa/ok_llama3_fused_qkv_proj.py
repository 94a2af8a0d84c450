# attnprep: gqa
# expect: passed
"""Correct: one fused qkv_proj of (H + 2*KV) * D out-features (Llama-3 / Qwen fused checkpoints),
split with torch.split into [q; k; v] blocks."""
import math
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.H, self.KV, self.D = num_heads, num_kv_heads, d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, (num_heads + 2 * num_kv_heads) * self.D)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, KV, D = self.H, self.KV, self.D
        q, k, v = torch.split(self.qkv_proj(x), [H * D, KV * D, KV * D], dim=-1)
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, KV, D).transpose(1, 2).repeat_interleave(H // KV, dim=1)
        v = v.view(B, T, KV, D).transpose(1, 2).repeat_interleave(H // KV, dim=1)
        s = q @ k.transpose(-2, -1) / math.sqrt(D)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
