# attnprep: sdpa
# expect: mask_leak
# diagnosis: softmax_global_max + causal_bottom_right
"""Go habits again in a second file: exported-looking CamelCase helpers returning (value, error),
guard clauses first, a `const`-like block of module constants, the causal offset computed as a
named variable before use."""
import math

import torch

NEG_INF = float("-inf")
DEFAULT_DIM = -1


def softmax(x, dim=DEFAULT_DIM):
    if x.numel() == 0:
        return x
    shift = x.max()
    e = torch.exp(x - shift)
    return e / e.sum(dim=dim, keepdim=True)


def CausalMask(L, S, device):
    if L <= 0 or S <= 0:
        return None, ValueError("empty attention")
    offset = S - L
    return torch.ones(L, S, dtype=torch.bool, device=device).tril(diagonal=offset), None


def ScaleFor(query, scale):
    if scale is not None:
        return scale, None
    return 1.0 / math.sqrt(query.size(-1)), None


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    factor, err = ScaleFor(query, scale)
    if err is not None:
        raise err
    scores = torch.matmul(query, key.transpose(-2, -1)) * factor
    if is_causal:
        allowed, err = CausalMask(query.size(-2), key.size(-2), query.device)
        if err is not None:
            raise err
        scores = scores.masked_fill(~allowed, NEG_INF)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, NEG_INF)
        else:
            scores = scores + attn_mask
    return torch.matmul(softmax(scores, dim=-1), value)
# bug-line: 18, 26
