# attnprep: alibi
# expect: passed
"""Correct: an nn.Module precomputes the (H, max_len, max_len) distance bias for 64 positions in a
non-persistent buffer and rebuilds it larger on demand; the functions use a module-level instance per H."""
import math
import torch
import torch.nn as nn


def alibi_slopes(num_heads):
    closest = 2 ** int(math.log2(num_heads))
    base = [2.0 ** (-8.0 * (i + 1) / closest) for i in range(closest)]
    odd = [2.0 ** (-4.0 * (2 * i + 1) / closest) for i in range(num_heads - closest)]
    return torch.tensor(base + odd, dtype=torch.float32)


class AlibiBias(nn.Module):
    def __init__(self, num_heads, max_len=64):
        super().__init__()
        self.num_heads = num_heads
        self._make(max_len)

    def _make(self, n):
        i = torch.arange(n)
        d = (i[:, None] - i[None, :]).float()
        self.register_buffer("bias", -alibi_slopes(self.num_heads)[:, None, None] * d, persistent=False)

    def forward(self, T, device, dtype):
        if T > self.bias.shape[-1]:
            self._make(2 * T)
        return self.bias[:, :T, :T].to(device=device, dtype=dtype)


_MODULES: dict = {}


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    mod = _MODULES.setdefault(H, AlibiBias(H))
    s = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D) + mod(T, q.device, q.dtype)
    neg = torch.finfo(s.dtype).min
    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), neg)
    if attention_mask is not None:
        s = s.masked_fill(~attention_mask.view(B, 1, 1, T), neg)
    return torch.einsum("bhij,bhjd->bhid", s.softmax(-1), v)
