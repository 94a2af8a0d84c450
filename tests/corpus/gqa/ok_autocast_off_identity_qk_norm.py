# attnprep: gqa
# expect: passed
"""Correct: matmuls inside torch.autocast(enabled=False), softmax computed in float32 with dtype=,
padding via F.pad-extended key mask, nn.Identity placeholder for a disabled q_norm."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0, qk_norm=False):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.q_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, KV, D = self.num_heads, self.num_kv_heads, self.head_dim
        with torch.autocast(device_type=x.device.type, enabled=False):
            q = self.q_norm(self.q_proj(x).view(B, T, H, D)).transpose(1, 2)
            k = self.k_norm(self.k_proj(x).view(B, T, KV, D)).transpose(1, 2)
            v = self.v_proj(x).view(B, T, KV, D).transpose(1, 2)
            k = k[:, :, None].expand(B, KV, H // KV, T, D).reshape(B, H, T, D)
            v = v[:, :, None].expand(B, KV, H // KV, T, D).reshape(B, H, T, D)
            s = torch.matmul(q, k.transpose(2, 3)) * D ** -0.5
            if attention_mask is not None:
                s = s + F.pad((~attention_mask).to(s.dtype)[:, None, None, :] * -1e30, (0, 0))
            if is_causal:
                s = s + torch.triu(torch.full((T, T), -1e30, dtype=s.dtype, device=s.device), diagonal=1)
            p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
            y = torch.matmul(p, v)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))
