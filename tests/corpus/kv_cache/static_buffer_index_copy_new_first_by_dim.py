# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_prepended + scale_by_dim
"""StaticCache-like habits: a buffer of the full length allocated per call, old and new keys written
with index_copy_ at cache_position indices, the causal mask from cache_position."""
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.nh, self.nkv, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def _update(self, past, new, cache_position):
        B, Hk, T_new, D = new.shape
        T_past = 0 if past is None else past.shape[2]
        buf = new.new_zeros(B, Hk, T_past + T_new, D)
        buf.index_copy_(2, torch.arange(T_new, device=new.device), new)
        if past is not None:
            buf.index_copy_(2, torch.arange(T_new, T_new + T_past, device=new.device), past)
        return buf

    def forward(self, x, cache=None):
        B, T, C = x.shape
        T_past = 0 if cache is None else cache[0].shape[2]
        cache_position = torch.arange(T_past, T_past + T, device=x.device)
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        k_all = self._update(None if cache is None else cache[0], k, cache_position)
        v_all = self._update(None if cache is None else cache[1], v, cache_position)
        rep = self.nh // self.nkv
        kk = k_all.repeat_interleave(rep, dim=1)
        vv = v_all.repeat_interleave(rep, dim=1)
        s = (q @ kk.transpose(-1, -2)) / self.hd
        kv_pos = torch.arange(T_past + T, device=x.device)
        allowed = kv_pos[None, :] <= cache_position[:, None]
        p = s.masked_fill(~allowed, float("-inf")).softmax(-1)
        out = (p @ vv).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k_all, v_all)
# bug-line: 23, 25, 40
