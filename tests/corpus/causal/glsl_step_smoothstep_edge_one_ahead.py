# attnprep: causal
# expect: mask_leak
# diagnosis: causal_leaks_next
"""A shader (GLSL) programmer's habits: step(edge, x) = x >= edge and mix(a, b, t) written as
helpers, coordinates as gl_FragCoord-like (row, col) grids, uniform-style constants in caps; the
causal mask built as step(col, row + 1), one column past the diagonal."""
import math

import torch


def step(edge, x):  # GLSL step: 1.0 where x >= edge
    return (x >= edge).to(torch.float32)


def mix(a, b, t):  # GLSL mix: a * (1 - t) + b * t, t in {0, 1} here
    return torch.where(t > 0.5, b, a)


NEG_INF = float("-inf")


def causal_mask(seq_len, device=None):
    frag_row = torch.arange(seq_len, device=device)[:, None].expand(seq_len, seq_len)
    frag_col = torch.arange(seq_len, device=device)[None, :].expand(seq_len, seq_len)
    visible = step(frag_col, frag_row + 1)
    return visible > 0.5


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
    visible = causal_mask(T, device=q.device)[None, None].to(torch.float32)
    if attention_mask is not None:
        visible = visible * attention_mask[:, None, None, :].to(torch.float32)
    scores = mix(torch.full_like(scores, NEG_INF), scores, visible)
    return torch.matmul(torch.softmax(scores, dim=-1), v)
# bug-line: 26
