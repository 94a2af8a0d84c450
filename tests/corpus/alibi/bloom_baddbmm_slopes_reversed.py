# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_reversed
"""BLOOM's build_alibi_tensor (slopes * arange over the keys, added by baddbmm with beta=1) on flattened
heads; the slope list is built from the smallest upwards and so comes out in reverse head order."""

import math

import torch


def alibi_slopes(num_heads):
    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, closest + 1)]
    if closest != num_heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        slopes += [extra ** p for p in range(1, 2 * (num_heads - closest), 2)]
    return torch.tensor(slopes[::-1], dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(q.device, q.dtype)
    # BLOOM: slope * j (the -slope * i part is constant per row and cancels in the softmax)
    alibi = (slopes[:, None] * torch.arange(T, device=q.device, dtype=q.dtype)[None, :])  # (H, T)
    alibi = alibi[None, :, None, :].expand(B, H, 1, T).reshape(B * H, 1, T)
    scores = torch.baddbmm(alibi, q.reshape(B * H, T, D), k.reshape(B * H, T, D).transpose(1, 2),
                           beta=1.0, alpha=1.0 / math.sqrt(D)).view(B, H, T, T)
    blocked = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    if attention_mask is not None:
        blocked = blocked | ~attention_mask[:, None, None, :]
    scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
    return scores.softmax(-1) @ v
# bug-line: 19
