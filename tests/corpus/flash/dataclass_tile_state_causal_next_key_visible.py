# attnprep: flash
# expect: mask_leak
# diagnosis: flash_causal_off_by_one
"""dataclasses for the online-softmax state: `@dataclass class RowState(m, l, acc)` with an
`absorb(s, v_tile)` method and a `result()` property, one state per query tile, the key tiles
walked by a plain for loop. Correct except under is_causal: the diagonal tile lets column r + 1
through (`cols > rows + 1`), so each query sees one future key; non-causal cases match."""

import math
from dataclasses import dataclass

import torch


@dataclass
class RowState:
    m: torch.Tensor
    l: torch.Tensor
    acc: torch.Tensor

    def absorb(self, s: torch.Tensor, v_tile: torch.Tensor) -> None:
        m_new = torch.maximum(self.m, s.amax(-1, keepdim=True))
        alpha = torch.exp(self.m - m_new)
        p = torch.exp(s - m_new)
        self.l = alpha * self.l + p.sum(-1, keepdim=True)
        self.acc = alpha * self.acc + p @ v_tile
        self.m = m_new

    @property
    def result(self) -> torch.Tensor:
        return self.acc / self.l


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    outs = []
    for i in range(0, L, block_size):
        q_tile = q[:, :, i:i + block_size] / math.sqrt(D)
        n = q_tile.shape[2]
        st = RowState(
            m=torch.full((B, H, n, 1), -math.inf, dtype=q.dtype, device=q.device),
            l=torch.zeros((B, H, n, 1), dtype=q.dtype, device=q.device),
            acc=torch.zeros((B, H, n, D), dtype=q.dtype, device=q.device),
        )
        for j in range(0, min(S, i + n + 1) if is_causal else S, block_size):
            k_tile, v_tile = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
            s = q_tile @ k_tile.transpose(-2, -1)
            if is_causal:
                rows = torch.arange(i, i + n, device=q.device)[:, None]
                cols = torch.arange(j, j + k_tile.shape[2], device=q.device)[None, :]
                s = s.masked_fill(cols > rows + 1, -math.inf)
            st.absorb(s, v_tile)
        outs.append(st.result)
    return torch.cat(outs, dim=2)
# bug-line: 46, 52
