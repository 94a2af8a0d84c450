# attnprep: flash
# expect: wrong_output
# diagnosis: missing_scale
"""A CUDA kernel's loop nest ported line by line: Br / Bc tile sizes, Tr / Tc tile counts, tiles
loaded by small helpers (load_tile, tile_scores), m / l / O_i updated in place of the kernel's
shared-memory arrays."""
import math

import torch


def load_tile(t, start, size):
    return t[:, :, start:start + size]


def tile_scores(Q_i, K_j):
    return Q_i @ K_j.transpose(-1, -2)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, N_q, d = q.shape
    N_k = k.shape[2]
    Br = Bc = block_size
    Tr, Tc = math.ceil(N_q / Br), math.ceil(N_k / Bc)
    softmax_scale = 1.0 / math.sqrt(d)
    O = torch.zeros_like(q)
    for i in range(Tr):
        Q_i = load_tile(q, i * Br, Br)
        rows = Q_i.shape[2]
        m = torch.full((B, H, rows, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros((B, H, rows, 1), dtype=q.dtype, device=q.device)
        O_i = torch.zeros_like(Q_i)
        for j in range(Tc):
            if is_causal and j * Bc > i * Br + rows - 1:
                break
            K_j, V_j = load_tile(k, j * Bc, Bc), load_tile(v, j * Bc, Bc)
            S_ij = tile_scores(Q_i, K_j)
            if is_causal:
                r = torch.arange(i * Br, i * Br + rows, device=q.device)[:, None]
                c = torch.arange(j * Bc, j * Bc + K_j.shape[2], device=q.device)[None, :]
                S_ij = S_ij.masked_fill(c > r, float("-inf"))
            m_new = torch.maximum(m, S_ij.amax(-1, keepdim=True))
            P_ij = torch.exp(S_ij - m_new)
            scale = torch.exp(m - m_new)
            l = l * scale + P_ij.sum(-1, keepdim=True)
            O_i = O_i * scale + P_ij @ V_j
            m = m_new
        O[:, :, i * Br:i * Br + rows] = O_i / l
    return O
# bug-line: 37
