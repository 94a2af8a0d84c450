# attnprep: flash
# expect: passed
"""No query blocking: all L rows at once against (L, block) tiles of keys (allowed by the bound),
einsum, a -1e9 fill and a finfo.min start for the running max."""

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    q = q * D ** -0.5
    neg = torch.finfo(q.dtype).min
    running_max = q.new_full((*q.shape[:-1], 1), neg)  # (B, H, L, 1)
    running_sum = q.new_zeros((*q.shape[:-1], 1))
    out = torch.zeros_like(q)
    query_pos = torch.arange(L, device=q.device)[:, None]  # (L, 1)
    for start in range(0, S, block_size):
        kb, vb = k[..., start:start + block_size, :], v[..., start:start + block_size, :]
        scores = torch.einsum("bhld,bhsd->bhls", q, kb)  # (B, H, L, bk)
        if is_causal:
            key_pos = torch.arange(start, start + kb.shape[-2], device=q.device)[None, :]
            scores = scores.masked_fill(key_pos > query_pos, -1e9)
        new_max = torch.maximum(running_max, scores.amax(-1, keepdim=True))
        weights = (scores - new_max).exp()
        correction = (running_max - new_max).exp()
        running_sum = running_sum * correction + weights.sum(-1, keepdim=True)
        out = out * correction + torch.einsum("bhls,bhsd->bhld", weights, vb)
        running_max = new_max
    return out / running_sum
