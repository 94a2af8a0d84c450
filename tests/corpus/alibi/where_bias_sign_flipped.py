# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_bias_sign_flipped
"""torch.where masks; the distance is written j - i (<= 0 in the past) and then subtracted, so the bias
rewards far keys instead of penalising them."""

import math

import torch
import torch.nn.functional as F


def alibi_slopes(num_heads):
    n = 2 ** int(math.log2(num_heads))
    out = [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]
    out += [2.0 ** (-4.0 * (2 * i + 1) / n) for i in range(num_heads - n)]
    return torch.tensor(out)


def alibi_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    m = alibi_slopes(q.shape[1]).to(q)[:, None, None]
    pos = torch.arange(T, device=q.device)
    dist = (pos[None, :] - pos[:, None]).to(q.dtype)
    logits = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D) - m * dist
    ok = pos[None, :] <= pos[:, None]
    if attention_mask is not None:
        ok = ok & attention_mask[:, None, None, :].bool()
    logits = torch.where(ok, logits, torch.tensor(float("-inf"), device=q.device, dtype=q.dtype))
    return torch.einsum("bhij,bhjd->bhid", F.softmax(logits, dim=-1), v)
# bug-line: 24, 25
