# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried
"""A Triton FlashAttention forward kernel read as Python: tl.make_block_ptr / tl.advance / tl.load with
boundary_check emulated by a tiny BlockPtr class, one program per (query block, batch·head), the
m_i / l_i / acc names of the tutorial."""
import math

import torch


class BlockPtr:
    def __init__(self, base, shape, offsets, block_shape):
        self.base, self.shape, self.offsets, self.block_shape = base, shape, list(offsets), block_shape

    def load(self):
        r0, c0 = self.offsets
        return self.base[..., r0:min(r0 + self.block_shape[0], self.shape[0]), c0:min(c0 + self.block_shape[1], self.shape[1])]


def make_block_ptr(base, shape, offsets, block_shape):
    return BlockPtr(base, shape, offsets, block_shape)


def advance(ptr, offsets):
    return BlockPtr(ptr.base, ptr.shape, [a + b for a, b in zip(ptr.offsets, offsets)], ptr.block_shape)


def _attn_fwd_program(q, k, v, out, start_m, BLOCK_M, BLOCK_N, sm_scale, causal):
    L, D = q.shape[-2:]
    S = k.shape[-2]
    Q_block_ptr = make_block_ptr(q, (L, D), (start_m * BLOCK_M, 0), (BLOCK_M, D))
    K_block_ptr = make_block_ptr(k, (S, D), (0, 0), (BLOCK_N, D))
    V_block_ptr = make_block_ptr(v, (S, D), (0, 0), (BLOCK_N, D))
    q_tile = Q_block_ptr.load()
    rows = q_tile.shape[-2]
    offs_m = start_m * BLOCK_M + torch.arange(rows, device=q.device)
    acc = torch.zeros(q_tile.shape, dtype=torch.float32, device=q.device)
    l_i = torch.zeros(q_tile.shape[:-1], dtype=torch.float32, device=q.device)
    m_i = torch.full(q_tile.shape[:-1], float("-inf"), dtype=torch.float32, device=q.device)
    hi = min(S, (start_m + 1) * BLOCK_M) if causal else S
    for start_n in range(0, hi, BLOCK_N):
        k_tile, v_tile = K_block_ptr.load(), V_block_ptr.load()
        qk = (q_tile @ k_tile.transpose(-1, -2)).float() * sm_scale
        if causal:
            offs_n = start_n + torch.arange(k_tile.shape[-2], device=q.device)
            qk = qk.masked_fill(offs_m[:, None] < offs_n[None, :], float("-inf"))
        m_ij = qk.amax(-1)
        p = torch.exp(qk - m_ij[..., None])
        alpha = torch.exp(m_i - m_ij)
        l_i = l_i * alpha + p.sum(-1)
        acc = acc * alpha[..., None] + p.to(v_tile.dtype) @ v_tile
        m_i = m_ij
        K_block_ptr = advance(K_block_ptr, (BLOCK_N, 0))
        V_block_ptr = advance(V_block_ptr, (BLOCK_N, 0))
    out[..., offs_m, :] = (acc / l_i[..., None]).to(out.dtype)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L, D = q.shape[-2:]
    out = torch.empty_like(q)
    sm_scale = 1.0 / math.sqrt(D)
    for start_m in range(triton_cdiv(L, block_size)):
        _attn_fwd_program(q, k, v, out, start_m, block_size, block_size, sm_scale, is_causal)
    return out


def triton_cdiv(a, b):
    return (a + b - 1) // b
# bug-line: 48
