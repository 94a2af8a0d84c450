# attnprep: alibi
# expect: mask_leak
# diagnosis: alibi_no_causal_mask + missing_scale
"""Қазақша түсініктемелер (Kazakh comments, Latin names: bastar, kulbeu, araqashyqtyq, salmaq,
bagdarlar); the relative bias built as slope * (j - i) over the whole square, as an encoder's
ALiBi would, with no causal mask after it, and the scores taken as the plain q·k product (the
scale kept in a default argument the caller overrides with 1)."""
import math

import torch


def alibi_slopes(num_heads):
    # ең жақын екі дәрежесі
    n = 2 ** math.floor(math.log2(num_heads))
    kulbeu = [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]
    kulbeu += [2.0 ** (-4.0 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.tensor(kulbeu, dtype=torch.float32)


def _upaylar(q, k, masshtab=None):
    # q·k көбейтіндісі, масштабпен
    masshtab = 1.0 / math.sqrt(q.shape[-1]) if masshtab is None else masshtab
    return torch.einsum("bhid,bhjd->bhij", q, k) * masshtab


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    upaylar = _upaylar(q, k, masshtab=1.0)  # ұпайлар
    i = torch.arange(T, device=q.device)
    araqashyqtyq = (i[None, :] - i[:, None]).to(q.dtype)  # j - i
    salmaq = alibi_slopes(H).to(q.device)[:, None, None] * araqashyqtyq  # ығысу
    upaylar = upaylar + salmaq
    if attention_mask is not None:
        upaylar = upaylar.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    return torch.softmax(upaylar, dim=-1) @ v
# bug-line: 29, 32
