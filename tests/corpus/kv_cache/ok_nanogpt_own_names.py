# attnprep: kv_cache
# expect: passed
# nanoGPT's CausalSelfAttention turned into GQA with a cache: own layer names (mapped by shape),
# the causal mask as a registered tril buffer, sliced at the cached offset.
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


class KVCacheAttention(nn.Module):

    def __init__(self, d_model, num_heads, num_kv_heads, block_size=64):
        super().__init__()
        assert d_model % num_heads == 0
        self.n_head = num_heads
        self.n_kv_head = num_kv_heads
        self.n_embd = d_model
        hs = d_model // num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, num_kv_heads * hs)
        self.value = nn.Linear(d_model, num_kv_heads * hs)
        self.c_proj = nn.Linear(d_model, d_model)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x, kv_cache=None):
        B, T, C = x.size()  # batch size, new tokens, embedding dimensionality (n_embd)
        hs = C // self.n_head
        q = self.query(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.key(x).view(B, T, self.n_kv_head, hs).transpose(1, 2)  # (B, nkv, T, hs)
        v = self.value(x).view(B, T, self.n_kv_head, hs).transpose(1, 2)  # (B, nkv, T, hs)
        past = 0
        if kv_cache is not None:
            past_k, past_v = kv_cache
            past = past_k.size(2)
            k = torch.cat((past_k, k), dim=2)
            v = torch.cat((past_v, v), dim=2)
        present = (k, v)
        S = past + T
        rep = self.n_head // self.n_kv_head
        k = k.repeat_interleave(rep, dim=1)  # (B, nh, S, hs)
        v = v.repeat_interleave(rep, dim=1)

        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, S) -> (B, nh, T, S)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, past:S, :S] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = att @ v  # (B, nh, T, S) x (B, nh, S, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side

        # output projection
        y = self.c_proj(y)
        return y, present
