# attnprep: flash
# expect: mask_leak
# diagnosis: flash_causal_off_by_one
"""Interview notes with explicit tile bounds (q_lo, q_hi, k_lo, k_hi): a tile is masked only when
k_hi > q_hi, i.e. when it reaches past the query block's last row, where it should be k_hi > q_lo + 1:
a square tile on the diagonal goes unmasked."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    out = torch.empty_like(q)
    for q_lo in range(0, L, block_size):
        q_hi = min(q_lo + block_size, L)
        qt = q[:, :, q_lo:q_hi] * (1.0 / math.sqrt(D))
        m = torch.full((B, H, q_hi - q_lo, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros_like(qt)
        k_end = min(S, q_hi) if is_causal else S
        for k_lo in range(0, k_end, block_size):
            k_hi = min(k_lo + block_size, S)
            s = qt @ k[:, :, k_lo:k_hi].transpose(-2, -1)
            if is_causal and k_hi > q_hi:
                rows = torch.arange(q_lo, q_hi, device=q.device)[:, None]
                cols = torch.arange(k_lo, k_hi, device=q.device)[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l = alpha * l + p.sum(-1, keepdim=True)
            acc = alpha * acc + p @ v[:, :, k_lo:k_hi]
            m = m_new
        out[:, :, q_lo:q_hi] = acc / l
    return out
