# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_reversed + alibi_bias_sign_flipped
"""BLOOM-flavoured: the slopes list built smallest first (reversed head order), and the bias added as
+slope·(i - j) (rewarding distance) under the causal mask."""

import math

import torch


def alibi_slopes(num_heads):
    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, closest + 1)]
    if closest != num_heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        slopes += [extra ** p for p in range(1, 2 * (num_heads - closest), 2)]
    return torch.tensor(slopes[::-1], dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    s = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
    pos = torch.arange(T, device=q.device)
    rel = (pos[:, None] - pos[None, :]).to(s.dtype)
    s = s + alibi_slopes(H).to(s)[:, None, None] * rel
    ok = pos[None, :] <= pos[:, None]
    if attention_mask is not None:
        ok = ok & attention_mask[:, None, None, :]
    s = torch.where(ok, s, float("-inf"))
    return torch.einsum("bhij,bhjd->bhid", s.softmax(-1), v)
