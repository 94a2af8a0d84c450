# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled
"""xformers-style scan over key blocks with a (m, l, acc) carry, the whole query length as one tile;
when the max grows the accumulator is rescaled but the running sum l is not."""

import math

import torch


def _step(carry, kv_blk, q, scale, causal_bias):
    m, l, acc = carry
    k_blk, v_blk = kv_blk
    s = torch.einsum("bhld,bhsd->bhls", q, k_blk) * scale
    if causal_bias is not None:
        s = s + causal_bias
    m_new = torch.maximum(m, s.amax(-1))
    p = torch.exp(s - m_new[..., None])
    corr = torch.exp(m - m_new)
    l = l + p.sum(-1)
    acc = acc * corr[..., None] + torch.einsum("bhls,bhsd->bhld", p, v_blk)
    return m_new, l, acc


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False, block_size: int = 64) -> torch.Tensor:
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1.0 / math.sqrt(D)
    carry = (q.new_full((B, H, L), float("-inf")), q.new_zeros((B, H, L)), torch.zeros_like(q))
    rows = torch.arange(L, device=q.device)[:, None]
    for s0 in range(0, S, block_size):
        cols = torch.arange(s0, min(s0 + block_size, S), device=q.device)[None, :]
        bias = None
        if is_causal:
            bias = torch.zeros(L, cols.shape[1], dtype=q.dtype, device=q.device).masked_fill(cols > rows, float("-inf"))
        carry = _step(carry, (k[:, :, s0:s0 + block_size], v[:, :, s0:s0 + block_size]), q, scale, bias)
    m, l, acc = carry
    return acc / l[..., None]
# bug-line: 21
