# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_reversed
"""A Fortran programmer's 1-based DO loops (h = 1 .. n), the slopes computed into a list and stored
into the output array in a second loop; the attention written with the same habits."""
import math

import torch


def alibi_slopes(num_heads):
    n = 2 ** int(math.floor(math.log2(num_heads)))
    vals = []
    for h in range(1, n + 1):  # DO h = 1, n
        vals.append(2.0 ** (-8.0 * h / n))
    for h in range(1, num_heads - n + 1):  # DO h = 1, H - n
        vals.append(2.0 ** (-4.0 * (2 * h - 1) / n))
    slopes = torch.zeros(num_heads, dtype=torch.float32)
    for h in range(1, num_heads + 1):  # DO h = 1, H
        slopes[num_heads - h] = vals[h - 1]
    return slopes


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(q.device, q.dtype)
    i = torch.arange(1, T + 1, device=q.device)  # 1-based positions
    dist = (i[:, None] - i[None, :]).to(q.dtype)  # i - j
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(D) - slopes[:, None, None] * dist
    blocked = (i[None, :] > i[:, None])[None, None]
    if attention_mask is not None:
        blocked = blocked | ~attention_mask[:, None, None, :]
    scores = scores.masked_fill(blocked, float("-inf"))
    return scores.softmax(-1) @ v
# bug-line: 20
