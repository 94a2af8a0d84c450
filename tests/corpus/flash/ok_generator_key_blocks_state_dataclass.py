# attnprep: flash
# expect: passed
"""Correct: key blocks come from a generator yielding (start, k_blk, v_blk); the online state kept in a
small dataclass; query blocks as well."""
import math
from dataclasses import dataclass

import torch


@dataclass
class State:
    m: torch.Tensor
    l: torch.Tensor
    acc: torch.Tensor

    def update(self, s, v_blk):
        m_new = torch.maximum(self.m, s.amax(-1, keepdim=True))
        alpha = torch.exp(self.m - m_new)
        p = torch.exp(s - m_new)
        self.l = self.l * alpha + p.sum(-1, keepdim=True)
        self.acc = self.acc * alpha + p @ v_blk
        self.m = m_new


def _blocks(k, v, n, size):
    for j in range(0, n, size):
        yield j, k[..., j:j + size, :], v[..., j:j + size, :]


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    out = torch.empty_like(q)
    for i in range(0, L, block_size):
        qb = q[..., i:i + block_size, :]
        n = qb.shape[-2]
        st = State(torch.full((B, H, n, 1), -math.inf, dtype=q.dtype, device=q.device),
                   torch.zeros(B, H, n, 1, dtype=q.dtype, device=q.device),
                   torch.zeros(B, H, n, D, dtype=q.dtype, device=q.device))
        limit = min(S, i + n) if is_causal else S
        for j, kb, vb in _blocks(k, v, limit, block_size):
            s = (qb @ kb.transpose(-1, -2)) / math.sqrt(D)
            if is_causal:
                rows = torch.arange(i, i + n, device=q.device)[:, None]
                cols = torch.arange(j, j + kb.shape[-2], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, -math.inf)
            st.update(s, vb)
        out[..., i:i + n, :] = st.acc / st.l
    return out
