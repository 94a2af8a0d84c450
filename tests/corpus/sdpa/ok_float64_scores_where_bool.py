# attnprep: sdpa
# expect: passed
"""Correct: scores accumulated in float64 and cast back, float masks added, bool via where; keyword-only style inside."""
import math
import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    m = torch.amax(x, dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(x - m)
    return e / torch.sum(e, dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    E = query.shape[-1]
    sc = scale if scale is not None else 1.0 / math.sqrt(E)
    s = torch.matmul(query.double(), key.double().transpose(-2, -1)) * sc
    L, S = s.shape[-2:]
    if is_causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is torch.bool:
            s = torch.where(attn_mask, s, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device))
        else:
            s = s + attn_mask.double()
    return torch.matmul(softmax(s, dim=-1), value.double()).to(query.dtype)
