# attnprep: sdpa
# expect: mask_leak
# diagnosis: causal_bottom_right
"""FlexAttention's programming model in eager torch: attn_mask and is_causal become a score_mod
and a mask_mod over broadcast index tensors; softmax written by hand."""
import math

import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = (x - m).exp()
    return e / e.sum(dim=dim, keepdim=True)


def _indices(L, S, device):
    q_idx = torch.arange(L, device=device)[:, None]
    kv_idx = torch.arange(S, device=device)[None, :]
    return q_idx, kv_idx


def make_causal_mod(L, S):
    def mask_mod(q_idx, kv_idx):
        return kv_idx <= q_idx + (S - L)
    return mask_mod


def make_bias_mod(bias):
    def score_mod(score):
        return score + bias
    return score_mod


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    score = (query @ key.transpose(-2, -1)) * scale_factor
    score_mod = lambda s: s
    mask_mod = None
    if is_causal:
        mask_mod = make_causal_mod(L, S)
    elif attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            mask_mod = lambda q_idx, kv_idx, m=attn_mask: m.expand(*score.shape[:-2], L, S)
        else:
            score_mod = make_bias_mod(attn_mask)
    score = score_mod(score)
    if mask_mod is not None:
        q_idx, kv_idx = _indices(L, S, query.device)
        score = score.masked_fill(~mask_mod(q_idx, kv_idx), float("-inf"))
    return softmax(score, dim=-1) @ value
# bug-line: 26
