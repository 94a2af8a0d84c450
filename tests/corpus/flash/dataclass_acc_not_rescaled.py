# attnprep: flash
# expect: wrong_output
# diagnosis: flash_acc_not_rescaled
# The mistake: the accumulator is not rescaled by exp(m_old - m_new) when the running max grows.
# The running state as a dataclass with __slots__ (m, l, acc) updated per key block, query tiles of
# block_size; causal blocks fully above the diagonal skipped.
from dataclasses import dataclass
import math
import torch


@dataclass(slots=True)
class RowState:
    m: torch.Tensor
    l: torch.Tensor
    acc: torch.Tensor

    def update(self, s, v_blk):
        m_new = torch.maximum(self.m, s.amax(-1, keepdim=True))
        alpha = torch.exp(self.m - m_new)
        p = torch.exp(s - m_new)
        self.l = self.l * alpha + p.sum(-1, keepdim=True)
        self.acc = self.acc + p @ v_blk
        self.m = m_new


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1.0 / math.sqrt(D)
    out = torch.empty_like(q)
    for i0 in range(0, L, block_size):
        qi = q[:, :, i0:i0 + block_size] * scale
        n = qi.shape[2]
        st = RowState(torch.full((B, H, n, 1), float("-inf"), device=q.device, dtype=q.dtype),
                      torch.zeros(B, H, n, 1, device=q.device, dtype=q.dtype),
                      torch.zeros(B, H, n, D, device=q.device, dtype=q.dtype))
        for j0 in range(0, S, block_size):
            if is_causal and j0 > i0 + n - 1:
                break
            s = qi @ k[:, :, j0:j0 + block_size].transpose(-1, -2)
            if is_causal:
                rows = torch.arange(i0, i0 + n, device=q.device)[:, None]
                cols = torch.arange(j0, j0 + s.shape[-1], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            st.update(s, v[:, :, j0:j0 + block_size])
        out[:, :, i0:i0 + n] = st.acc / st.l
    return out
# bug-line: 23
