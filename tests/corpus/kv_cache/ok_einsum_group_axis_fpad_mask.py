# attnprep: kv_cache
# expect: passed
"""Correct: no repeat at all: queries viewed (B, G, R, T, D) against the (B, G, S, D) cache in one einsum,
finfo.min fill, mask via F.pad of a tril block (the past columns are all True)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        G, D = self.num_kv_heads, self.head_dim
        R = self.num_heads // G
        q = self.q_proj(x).view(B, T, G, R, D).permute(0, 2, 3, 1, 4)        # (B, G, R, T, D)
        k = self.k_proj(x).view(B, T, G, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, G, D).transpose(1, 2)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=-2)
            v = torch.cat((cache[1], v), dim=-2)
        past = k.shape[-2] - T
        s = torch.einsum("bgrtd,bgsd->bgrts", q, k) * D ** -0.5
        block = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        allowed = F.pad(block, (past, 0), value=True)                       # (T, past + T)
        s = s.masked_fill(~allowed, torch.finfo(s.dtype).min)
        y = torch.einsum("bgrts,bgsd->btgrd", s.softmax(-1), v).reshape(B, T, C)
        return self.o_proj(y), (k, v)
