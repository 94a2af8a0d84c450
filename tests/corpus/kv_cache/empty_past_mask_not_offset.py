# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
# The mistake: the chunk's causal mask is tril(0) over (T, S): not offset by T_past, new tokens lose most of the prefix.
# cache=None replaced by empty (B, KV, 0, D) tensors so one code path concatenates; scores by
# baddbmm(beta=0) over (B·H) rows; the mask from tril(diagonal=T_past).
import math
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.H, self.KV = num_heads, num_kv_heads
        self.D = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        H, KV, D = self.H, self.KV, self.D
        if cache is None:
            empty = x.new_zeros(B, KV, 0, D)
            cache = (empty, empty)
        past_k, past_v = cache
        k = torch.cat([past_k, self.k_proj(x).view(B, T, KV, D).transpose(1, 2)], dim=2)
        v = torch.cat([past_v, self.v_proj(x).view(B, T, KV, D).transpose(1, 2)], dim=2)
        P, S = past_k.shape[2], k.shape[2]
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        kr = k.repeat_interleave(H // KV, dim=1)
        vr = v.repeat_interleave(H // KV, dim=1)
        s = torch.baddbmm(x.new_empty(B * H, T, S), q.reshape(B * H, T, D), kr.reshape(B * H, S, D).transpose(1, 2),
                          beta=0.0, alpha=1.0 / math.sqrt(D)).view(B, H, T, S)
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=0)
        s = s.masked_fill(~allowed, float("-inf"))
        out = (s.softmax(-1) @ vr).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k, v)
# bug-line: 37
