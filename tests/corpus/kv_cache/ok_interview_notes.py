# attnprep: kv_cache
# expect: passed
# 面经 style: MHA/GQA with KV cache in a few lines, own names, expand + reshape, a loop-free mask.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.nh, self.nkv, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, num_kv_heads * self.hd)
        self.wv = nn.Linear(d_model, num_kv_heads * self.hd)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        bs, n, _ = x.shape
        q = self.wq(x).reshape(bs, n, self.nh, self.hd).transpose(1, 2)
        k = self.wk(x).reshape(bs, n, self.nkv, self.hd).transpose(1, 2)
        v = self.wv(x).reshape(bs, n, self.nkv, self.hd).transpose(1, 2)
        if cache is not None:
            k_cache, v_cache = cache
            k = torch.cat((k_cache, k), dim=-2)
            v = torch.cat((v_cache, v), dim=-2)
        cache = (k, v)
        L = k.size(-2)
        rep = self.nh // self.nkv
        k = k[:, :, None].expand(-1, -1, rep, -1, -1).reshape(bs, self.nh, L, self.hd)
        v = v[:, :, None].expand(-1, -1, rep, -1, -1).reshape(bs, self.nh, L, self.hd)
        att = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        start = L - n  # where the new tokens begin
        mask = torch.arange(L, device=x.device)[None, :] > torch.arange(start, L, device=x.device)[:, None]
        att = att.masked_fill(mask, float("-inf"))
        out = F.softmax(att, dim=-1) @ v
        return self.wo(out.transpose(1, 2).reshape(bs, n, -1)), cache
