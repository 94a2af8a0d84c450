# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_prepended
"""DeepSeek style; the new keys put before the cached ones."""
import torch
import torch.nn.functional as F
from torch import nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv = num_kv_heads
        self.head_dim = d_model // num_heads
        self.softmax_scale = self.head_dim ** -0.5
        self.wq = nn.Linear(d_model, num_heads * self.head_dim)
        self.wk = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wv = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wo = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x: torch.Tensor, cache=None):
        bsz, seqlen, _ = x.size()
        q = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        k = self.wk(x).view(bsz, seqlen, self.n_kv, self.head_dim)
        v = self.wv(x).view(bsz, seqlen, self.n_kv, self.head_dim)
        if cache is not None:
            k = torch.cat([k, cache[0].transpose(1, 2)], dim=1)
            v = torch.cat([v, cache[1].transpose(1, 2)], dim=1)
        end_pos = k.size(1)
        start_pos = end_pos - seqlen
        rep = self.n_heads // self.n_kv
        k_full = k.unsqueeze(3).expand(-1, -1, -1, rep, -1).flatten(2, 3)
        v_full = v.unsqueeze(3).expand(-1, -1, -1, rep, -1).flatten(2, 3)
        scores = torch.einsum("bshd,bthd->bsht", q, k_full) * self.softmax_scale
        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu_(start_pos + 1)
        scores = scores + mask.unsqueeze(1)
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        out = torch.einsum("bsht,bthd->bshd", scores, v_full)
        out = self.wo(out.flatten(2))
        return out, (k.transpose(1, 2), v.transpose(1, 2))
# bug-line: 28, 29
