# attnprep: sdpa
# expect: mask_leak
# diagnosis: bool_mask_inverted + softmax_global_max
"""Two objects, two mistakes: softmax subtracts the max of the whole tensor (not per row) AND scaled_dot_product_attention fills where the bool mask is True (inverted); its own inline softmax is right."""

import math

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    # 数值稳定：减去最大值（这里减的是整个张量的最大值）
    z = x - x.max()
    e = z.exp()
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    logits = torch.matmul(query, key.transpose(-2, -1)) * factor
    if is_causal:
        logits = torch.where(torch.ones(L, S, dtype=torch.bool, device=query.device).tril(), logits, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            logits = torch.where(attn_mask, float("-inf"), logits)
        else:
            logits = logits + attn_mask
    logits = logits - logits.amax(-1, keepdim=True)
    w = logits.exp()
    w = w / w.sum(-1, keepdim=True)
    return torch.matmul(w, value)
# bug-line: 13, 26
