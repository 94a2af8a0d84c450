# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""nanochat's engine habits, made stateless: a small KVCache object built from the (k, v) handed
in, `insert_kv` returning the full keys and values, `get_pos()`; the attention branches as
nanochat's does on Tq == 1 (no mask), Tq == Tk (causal) and a chunk after a prefix (a bool mask
built with tril)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCache:
    def __init__(self, k=None, v=None):
        self.k, self.v = k, v

    def get_pos(self):
        return 0 if self.k is None else self.k.size(2)

    def insert_kv(self, k, v):
        self.k = k if self.k is None else torch.cat([self.k, k], dim=2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=2)
        return self.k, self.v


def attend(q, k, v):
    Tq, Tk = q.size(2), k.size(2)
    att = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
    if Tq == 1:
        pass  # one new token sees the whole cache
    elif Tq == Tk:
        att = att.masked_fill(torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    else:
        prefix_len = Tk - Tq  # the chunk's first query sits after prefix_len cached keys
        attn_mask = torch.ones((Tq, Tk), dtype=torch.bool, device=q.device).tril()
        att = att.masked_fill(~attn_mask, float("-inf"))
    return F.softmax(att, dim=-1) @ v


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_head, self.n_kv_head = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.c_q = nn.Linear(d_model, num_heads * self.head_dim)
        self.c_k = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.c_v = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.c_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.size()
        q = self.c_q(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.c_k(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.c_v(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        kv_cache = KVCache(*cache) if cache is not None else KVCache()
        k, v = kv_cache.insert_kv(k, v)
        rep = self.n_head // self.n_kv_head
        y = attend(q, k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1))
        y = y.transpose(1, 2).contiguous().view(B, T, -1)
        return self.c_proj(y), (kv_cache.k, kv_cache.v)
# bug-line: 35
