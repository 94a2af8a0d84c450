# attnprep: sdpa
# expect: passed
"""Correct: einsum over any leading dims, torch.where masks with finfo.min, q pre-scaled, the
softmax with keepdim'd amax and a reciprocal."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    shifted = x - x.amax(dim=dim, keepdim=True)
    num = shifted.exp()
    return num * num.sum(dim=dim, keepdim=True).reciprocal()


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    E = query.shape[-1]
    q = query * (E ** -0.5 if scale is None else scale)
    s = torch.einsum("...le,...se->...ls", q, key)
    neg = torch.finfo(s.dtype).min
    if is_causal:
        L, S = s.shape[-2:]
        i = torch.arange(L, device=s.device)[:, None]
        j = torch.arange(S, device=s.device)[None, :]
        s = torch.where(j <= i, s, neg)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            s = torch.where(attn_mask, s, neg)
        else:
            s = s + attn_mask
    p = softmax(s, dim=-1)
    return torch.einsum("...ls,...sv->...lv", p, value)
