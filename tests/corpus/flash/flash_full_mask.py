# attnprep: flash
# expect: structure
# diagnosis: flash_full_scores
"""A right online softmax over tiles, but the causal mask is built once as an (L, S) matrix and
sliced per tile: the mask alone is as big as the score matrix."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    causal = torch.ones(L, S, dtype=torch.bool, device=q.device).tril() if is_causal else None
    blocks = []
    for i in range(0, L, block_size):
        qi = q[:, :, i:i + block_size] / math.sqrt(D)
        m = torch.full(qi.shape[:-1] + (1,), float("-inf"), device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros_like(qi)
        for j in range(0, S, block_size):
            s = qi @ k[:, :, j:j + block_size].transpose(-2, -1)
            if causal is not None:
                s = s.masked_fill(~causal[i:i + block_size, j:j + block_size], float("-inf"))
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l = alpha * l + p.sum(-1, keepdim=True)
            acc = alpha * acc + p @ v[:, :, j:j + block_size]
            m = m_new
        blocks.append(acc / l)
    return torch.cat(blocks, dim=2)
