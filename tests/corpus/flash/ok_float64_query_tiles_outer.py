# attnprep: flash
# expect: passed
"""Correct: FA2 order (query tiles outside, key tiles inside, the causal loop stopping at the diagonal), running statistics in float64, cast back per tile."""
import math
import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    """FA2 order: query tiles outside, key tiles inside; float64 running stats, cast back at the end."""
    B, H, L, D = q.shape
    S = k.shape[-2]
    scale = 1.0 / math.sqrt(D)
    outs = []
    for qs in range(0, L, block_size):
        qe = min(qs + block_size, L)
        qi = q[:, :, qs:qe].double() * scale
        m_i = torch.full((B, H, qe - qs, 1), float("-inf"), dtype=torch.float64, device=q.device)
        l_i = torch.zeros((B, H, qe - qs, 1), dtype=torch.float64, device=q.device)
        acc = torch.zeros((B, H, qe - qs, D), dtype=torch.float64, device=q.device)
        kend = min(S, qe) if is_causal else S
        for ks in range(0, kend, block_size):
            ke = min(ks + block_size, S)
            s = qi @ k[:, :, ks:ke].double().transpose(-1, -2)
            if is_causal:
                rows = torch.arange(qs, qe, device=q.device)[:, None]
                cols = torch.arange(ks, ke, device=q.device)[None, :]
                s = torch.where(cols <= rows, s, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device))
            m_new = torch.maximum(m_i, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m_i - m_new)
            l_i = l_i * alpha + p.sum(-1, keepdim=True)
            acc = acc * alpha + p @ v[:, :, ks:ke].double()
            m_i = m_new
        outs.append((acc / l_i).to(q.dtype))
    return torch.cat(outs, dim=2)
