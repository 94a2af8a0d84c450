# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_from_zero
"""numpy first, torch last: the slopes as a numpy geometric sequence (np.exp2, np.arange, np.concatenate
for a head count that is not a power of two), handed over with torch.from_numpy; the bias and the masks
in torch. The power-of-two exponents run 0 .. n-1, so the first head's slope is 1 and every slope is
one step too large; the other heads' slopes are right."""

import math

import numpy as np
import torch


def alibi_slopes(num_heads):
    n = 2 ** int(np.floor(np.log2(num_heads)))
    ratio = np.exp2(-8.0 / n)
    slopes = ratio ** np.arange(n)  # head h gets ratio ** h
    if n < num_heads:
        odd = np.arange(1, 2 * (num_heads - n), 2, dtype=np.float64)
        slopes = np.concatenate([slopes, np.power(np.exp2(-4.0 / n), odd)])
    return torch.from_numpy(slopes).to(torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    m = alibi_slopes(H).to(q.device)
    pos = torch.arange(T, device=q.device)
    distance = (pos[:, None] - pos[None, :]).to(q.dtype)  # i - j
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D) - m[:, None, None] * distance
    allowed = distance >= 0
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)
# bug-line: 18
