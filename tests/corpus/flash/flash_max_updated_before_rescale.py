# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_updated_before_rescale
"""The running max is moved on before the rescale factor is taken: alpha = exp(m - m_new) is 1."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1 / math.sqrt(D)
    out = []
    for i in range(0, L, block_size):
        qi = q[:, :, i:i + block_size]  # (B, H, bq, D)
        bq = qi.shape[2]
        m = torch.full((B, H, bq, 1), float("-inf"), device=q.device)
        l = torch.zeros(B, H, bq, 1, device=q.device)
        acc = torch.zeros(B, H, bq, D, device=q.device)
        for j in range(0, S, block_size):
            if is_causal and j > i + bq - 1:
                break
            kj = k[:, :, j:j + block_size]  # (B, H, bk, D)
            vj = v[:, :, j:j + block_size]
            s = qi @ kj.transpose(-2, -1) * scale  # (B, H, bq, bk)
            if is_causal:
                qpos = torch.arange(i, i + bq, device=q.device)[:, None]
                kpos = torch.arange(j, j + kj.shape[2], device=q.device)[None, :]
                s = s.masked_fill(kpos > qpos, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            m = m_new
            p = torch.exp(s - m)
            alpha = torch.exp(m - m_new)
            l = alpha * l + p.sum(dim=-1, keepdim=True)
            acc = alpha * acc + p @ vj
        out.append(acc / l)
    return torch.cat(out, dim=2)  # (B, H, L, D)
