# attnprep: alibi
# expect: mask_leak
# diagnosis: alibi_no_causal_mask
"""A TypedDict for the ALiBi tables (`AlibiTables(slopes, distance)`), the distance as
`(j - i)` signed the way MPT's gen_alibi_bias builds it, the bias `slope * (j - i)` relied on to
push the future away: it does for the past (negative), but future keys get a positive bias, and no
causal mask is applied."""

import math
from typing import TypedDict

import torch


class AlibiTables(TypedDict):
    slopes: torch.Tensor
    distance: torch.Tensor


def alibi_slopes(num_heads):
    n = 2 ** math.floor(math.log2(num_heads))
    base = [2 ** (-8 * i / n) for i in range(1, n + 1)]
    extra = [2 ** (-4 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.tensor(base + extra, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    pos = torch.arange(T, device=q.device)
    tables: AlibiTables = {"slopes": alibi_slopes(H).to(q.device), "distance": (pos[None, :] - pos[:, None]).float()}
    bias = tables["slopes"][:, None, None] * tables["distance"]
    s = q @ k.transpose(-1, -2) / math.sqrt(D) + bias
    if attention_mask is not None:
        s = s.masked_fill(~attention_mask[:, None, None, :], -math.inf)
    return s.softmax(-1) @ v
# bug-line: 32
