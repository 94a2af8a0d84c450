# attnprep: kv_cache
# expect: passed
"""Rust habits: every helper returns (value, None) or (None, error) like a Result, the caller
propagates the error early (the ? operator by hand); shapes checked on the way."""
import math

import torch
import torch.nn as nn


def split_heads(t, heads, head_dim):
    B, T, W = t.shape
    if W != heads * head_dim:
        return None, f"width {W} is not {heads} x {head_dim}"
    return t.view(B, T, heads, head_dim).transpose(1, 2), None


def append_cache(cache, k, v):
    if cache is None:
        return (k, v), None
    pk, pv = cache
    if pk.shape[:2] != k.shape[:2] or pk.shape[-1] != k.shape[-1]:
        return None, f"cache {tuple(pk.shape)} does not fit {tuple(k.shape)}"
    return (torch.cat((pk, k), dim=2), torch.cat((pv, v), dim=2)), None


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.kvh, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q, e = split_heads(self.q_proj(x), self.h, self.hd)
        if e:
            raise ValueError(e)
        k, e = split_heads(self.k_proj(x), self.kvh, self.hd)
        if e:
            raise ValueError(e)
        v, e = split_heads(self.v_proj(x), self.kvh, self.hd)
        if e:
            raise ValueError(e)
        new_cache, e = append_cache(cache, k, v)
        if e:
            raise ValueError(e)
        k_all, v_all = new_cache
        S = k_all.shape[2]
        past = S - T
        g = self.h // self.kvh
        k_all_h = k_all[:, :, None].expand(B, self.kvh, g, S, self.hd).reshape(B, self.h, S, self.hd)
        v_all_h = v_all[:, :, None].expand(B, self.kvh, g, S, self.hd).reshape(B, self.h, S, self.hd)
        s = q @ k_all_h.transpose(-1, -2) / math.sqrt(self.hd)
        pos_q = past + torch.arange(T, device=x.device)
        s = s.masked_fill(torch.arange(S, device=x.device)[None, :] > pos_q[:, None], float("-inf"))
        o = (s.softmax(dim=-1) @ v_all_h).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(o), new_cache
