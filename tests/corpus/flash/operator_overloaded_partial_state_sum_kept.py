# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled
"""Split-K habits with an operator-overloaded partial result: Partial(m, l, acc) objects merged
with `|` as a combine kernel does, one division at the end."""
import math
from dataclasses import dataclass

import torch


@dataclass
class Partial:
    m: torch.Tensor     # (B, H, bq, 1) running max
    l: torch.Tensor     # (B, H, bq, 1) running sum
    acc: torch.Tensor   # (B, H, bq, D) unnormalised output

    @classmethod
    def empty(cls, q):
        shape = q.shape[:-1] + (1,)
        return cls(q.new_full(shape, float("-inf")), q.new_zeros(shape), torch.zeros_like(q))

    def __or__(self, other: "Partial") -> "Partial":
        m = torch.maximum(self.m, other.m)
        a = torch.exp(self.m - m).nan_to_num(0.0)
        b = torch.exp(other.m - m).nan_to_num(0.0)
        return Partial(m, self.l + other.l * b, self.acc * a + other.acc * b)

    def finish(self):
        return self.acc / self.l


def tile(q_blk, k_blk, v_blk, scale, mask=None):
    s = (q_blk @ k_blk.transpose(-1, -2)) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    m = s.amax(-1, keepdim=True)
    p = torch.exp(s - m).nan_to_num(0.0)
    return Partial(m, p.sum(-1, keepdim=True), p @ v_blk)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    scale = 1.0 / math.sqrt(D)
    out = torch.empty_like(q)
    for i in range(0, L, block_size):
        q_blk = q[:, :, i:i + block_size]
        state = Partial.empty(q_blk)
        rows = torch.arange(i, i + q_blk.shape[-2], device=q.device)[:, None]
        for j in range(0, S, block_size):
            if is_causal and j > i + q_blk.shape[-2] - 1:
                break
            cols = torch.arange(j, min(j + block_size, S), device=q.device)[None, :]
            mask = cols <= rows if is_causal else None
            state = state | tile(q_blk, k[:, :, j:j + block_size], v[:, :, j:j + block_size], scale, mask)
        out[:, :, i:i + block_size] = state.finish()
    return out
# bug-line: 27
