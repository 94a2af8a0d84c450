# attnprep: flash
# expect: passed
"""Correct: each (query tile, key tile) pair is classified by a `match` on its position relative to
the diagonal (`"below"` -> full tile, `"diagonal"` -> masked, `"above"` -> skipped), the running
statistics kept in float32 even for a float32 input, the scale folded into exp2 via log2(e) as the
Triton tutorial's descendants do, and the result cast back."""

import math

import torch

LOG2E = 1.4426950408889634


def tile_kind(i, n, j, m, causal):
    if not causal or j + m - 1 <= i:
        return "below"
    if j > i + n - 1:
        return "above"
    return "diagonal"


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    qk_scale = LOG2E / math.sqrt(D)
    out = torch.empty_like(q)
    for i in range(0, L, block_size):
        qt = q[:, :, i:i + block_size].float()
        n = qt.shape[2]
        m = torch.full((B, H, n, 1), -math.inf, device=q.device)
        l = torch.zeros((B, H, n, 1), device=q.device)
        acc = torch.zeros((B, H, n, D), device=q.device)
        for j in range(0, S, block_size):
            kt, vt = k[:, :, j:j + block_size].float(), v[:, :, j:j + block_size].float()
            s = (qt @ kt.transpose(-1, -2)) * qk_scale
            match tile_kind(i, n, j, kt.shape[2], is_causal):
                case "above":
                    continue
                case "diagonal":
                    r = torch.arange(i, i + n, device=q.device)[:, None]
                    c = torch.arange(j, j + kt.shape[2], device=q.device)[None, :]
                    s = s.masked_fill(c > r, -math.inf)
                case "below":
                    pass
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            alpha = torch.exp2(m - m_new)
            p = torch.exp2(s - m_new)
            l = l * alpha + p.sum(-1, keepdim=True)
            acc = acc * alpha + p @ vt
            m = m_new
        out[:, :, i:i + n] = (acc / l).to(q.dtype)
    return out
