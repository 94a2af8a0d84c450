# attnprep: flash
# expect: structure
# diagnosis: flash_full_scores
"""While loops; the causal bias built once for the whole (L, S) and sliced per tile."""
import math
from typing import Optional

import torch
from torch import Tensor


def _causal_bias(i0: int, i1: int, j0: int, j1: int, device) -> Tensor:
    qi = torch.arange(i0, i1, device=device)[:, None]
    kj = torch.arange(j0, j1, device=device)[None, :]
    return torch.zeros(i1 - i0, j1 - j0, device=device).masked_fill(kj > qi, -1e9)


def flash_attention(q: Tensor, k: Tensor, v: Tensor, is_causal: bool = False, block_size: int = 64) -> Tensor:
    B, H, L, D = q.shape
    S = k.shape[-2]
    sm_scale = 1.0 / math.sqrt(D)
    o: Optional[Tensor] = None
    full_bias = _causal_bias(0, L, 0, S, q.device) if is_causal else None
    pieces = []
    i0 = 0
    while i0 < L:
        i1 = min(i0 + block_size, L)
        qf = q[:, :, i0:i1].float() * sm_scale
        row_max = torch.full((B, H, i1 - i0), -float("inf"), device=q.device)
        row_sum = torch.zeros((B, H, i1 - i0), device=q.device)
        o = torch.zeros((B, H, i1 - i0, D), device=q.device)
        j0 = 0
        stop = min(S, i1) if is_causal else S
        while j0 < stop:
            j1 = min(j0 + block_size, S)
            s = torch.einsum("bhid,bhjd->bhij", qf, k[:, :, j0:j1].float())
            if is_causal:
                s = s + full_bias[i0:i1, j0:j1]
            new_max = torch.maximum(row_max, s.amax(-1))
            p = torch.exp(s - new_max.unsqueeze(-1))
            rescale = torch.exp(row_max - new_max)
            row_sum = row_sum * rescale + p.sum(-1)
            o = o * rescale.unsqueeze(-1) + torch.einsum("bhij,bhjd->bhid", p, v[:, :, j0:j1].float())
            row_max = new_max
            j0 = j1
        pieces.append((o / row_sum.unsqueeze(-1)).to(q.dtype))
        i0 = i1
    return torch.cat(pieces, dim=-2)
