# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_prepended + missing_scale
"""Estonian comments (eesti keeles: vahemälu, võtmed, väärtused, uued, vanad) over a
`result`-returning style; the new keys and values concatenated before the cached ones, and the
scores left unscaled (the scale computed into a name nothing reads)."""
import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.pead = num_heads  # päid
        self.kv_pead = num_kv_heads
        self.pea_mõõt = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.pea_mõõt)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.pea_mõõt)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        result = None
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.pead, self.pea_mõõt).transpose(1, 2)
        uued_k = self.k_proj(x).view(B, T, self.kv_pead, self.pea_mõõt).transpose(1, 2)
        uued_v = self.v_proj(x).view(B, T, self.kv_pead, self.pea_mõõt).transpose(1, 2)
        if cache is None:
            võtmed, väärtused = uued_k, uued_v
        else:
            vanad_k, vanad_v = cache  # vahemälu
            võtmed = torch.cat([uued_k, vanad_k], dim=2)
            väärtused = torch.cat([uued_v, vanad_v], dim=2)
        kokku = võtmed.shape[2]
        mastaap = 1.0 / math.sqrt(self.pea_mõõt)
        rühm = self.pead // self.kv_pead
        k = võtmed.repeat_interleave(rühm, dim=1)
        v = väärtused.repeat_interleave(rühm, dim=1)
        skoorid = q @ k.transpose(-2, -1)
        positsioonid = torch.arange(kokku - T, kokku, device=x.device)[:, None]
        lubatud = torch.arange(kokku, device=x.device)[None, :] <= positsioonid
        skoorid = skoorid.masked_fill(~lubatud, float("-inf"))
        väljund = (skoorid.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        result = (self.o_proj(väljund), (võtmed, väärtused))
        return result
# bug-line: 34, 35, 41
