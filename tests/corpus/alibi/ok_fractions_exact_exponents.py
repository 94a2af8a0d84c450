# attnprep: alibi
# expect: passed
"""The slopes' exponents kept exact with fractions.Fraction (-8i/n and -4(2i-1)/n as rationals) and
turned into floats only at the end; the bias as a (H, T, T) tensor."""
import math
from fractions import Fraction

import torch


def _exponents(num_heads):
    n = 1 << (num_heads.bit_length() - 1)
    exps = [Fraction(-8 * i, n) for i in range(1, n + 1)]
    exps += [Fraction(-4 * (2 * i - 1), n) for i in range(1, num_heads - n + 1)]
    return exps


def alibi_slopes(num_heads):
    return torch.tensor([2.0 ** float(e) for e in _exponents(num_heads)], dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    pos = torch.arange(T, device=q.device)
    rel = (pos[None, :] - pos[:, None]).to(q.dtype)  # j - i, <= 0 where allowed
    bias = alibi_slopes(H).to(q.device, q.dtype).view(H, 1, 1) * rel  # (H, T, T)
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D) + bias
    allowed = (pos[None, :] <= pos[:, None])[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)
