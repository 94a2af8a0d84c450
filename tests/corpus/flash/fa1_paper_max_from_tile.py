# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried
"""FlashAttention paper, Algorithm 1 (K/V blocks outside, Q blocks inside): m_new is the new
tile's max alone instead of max(m_i, m_ij), so exp(m_i - m_new) overflows once an earlier tile
held much larger scores."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, N_q, d = q.shape
    N_k = k.shape[2]
    Br = Bc = block_size
    Tr = math.ceil(N_q / Br)
    Tc = math.ceil(N_k / Bc)
    O = torch.zeros_like(q)
    l = torch.zeros(B, H, N_q, 1, dtype=q.dtype, device=q.device)
    m = torch.full((B, H, N_q, 1), -float("inf"), dtype=q.dtype, device=q.device)
    for j in range(Tc):
        K_j = k[:, :, j * Bc:(j + 1) * Bc]
        V_j = v[:, :, j * Bc:(j + 1) * Bc]
        for i in range(Tr):
            if is_causal and j > i:
                continue
            Q_i = q[:, :, i * Br:(i + 1) * Br]
            O_i, l_i, m_i = O[:, :, i * Br:(i + 1) * Br], l[:, :, i * Br:(i + 1) * Br], m[:, :, i * Br:(i + 1) * Br]
            S_ij = Q_i @ K_j.transpose(-1, -2) / math.sqrt(d)
            if is_causal and i == j:
                S_ij = S_ij.masked_fill(torch.ones_like(S_ij, dtype=torch.bool).triu(1), -float("inf"))
            m_ij = S_ij.amax(dim=-1, keepdim=True)
            P_ij = torch.exp(S_ij - m_ij)
            l_ij = P_ij.sum(dim=-1, keepdim=True)
            m_new = m_ij  # the new block's max
            l_new = torch.exp(m_i - m_new) * l_i + torch.exp(m_ij - m_new) * l_ij
            O[:, :, i * Br:(i + 1) * Br] = (l_i * torch.exp(m_i - m_new) * O_i
                                            + torch.exp(m_ij - m_new) * (P_ij @ V_j)) / l_new
            l[:, :, i * Br:(i + 1) * Br] = l_new
            m[:, :, i * Br:(i + 1) * Br] = m_new
    return O
