# attnprep: flash
# expect: wrong_output
# diagnosis: flash_normalised_per_block
"""FlashAttention paper, Algorithm 1 (K/V blocks outside): P_ij is divided by its own row sum
before it meets V_j, then merged with exp(m - m_new) weights as if it were still unnormalised."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, N, d = q.shape
    M = k.shape[2]
    Br = Bc = block_size
    O = torch.zeros_like(q)
    l = torch.zeros(B, H, N, 1, device=q.device)
    m = torch.full((B, H, N, 1), float("-inf"), device=q.device)
    tau = 1 / math.sqrt(d)
    for j in range(0, M, Bc):
        K_j, V_j = k[:, :, j:j + Bc], v[:, :, j:j + Bc]
        for i in range(0, N, Br):
            if is_causal and j > i + Br - 1:
                continue
            Q_i = q[:, :, i:i + Br]
            S_ij = tau * Q_i @ K_j.transpose(-2, -1)
            if is_causal:
                rows = torch.arange(i, i + Q_i.shape[2], device=q.device)[:, None]
                cols = torch.arange(j, j + K_j.shape[2], device=q.device)[None, :]
                S_ij = S_ij.masked_fill(cols > rows, float("-inf"))
            m_i, l_i = m[:, :, i:i + Br], l[:, :, i:i + Br]
            m_ij = S_ij.amax(-1, keepdim=True)
            P_ij = torch.exp(S_ij - m_ij)
            l_ij = P_ij.sum(-1, keepdim=True)
            P_ij = P_ij / l_ij
            m_new = torch.maximum(m_i, m_ij)
            l_new = torch.exp(m_i - m_new) * l_i + torch.exp(m_ij - m_new) * l_ij
            O[:, :, i:i + Br] = torch.exp(m_i - m_new) * O[:, :, i:i + Br] + torch.exp(m_ij - m_new) * (P_ij @ V_j)
            m[:, :, i:i + Br], l[:, :, i:i + Br] = m_new, l_new
    return O / l
