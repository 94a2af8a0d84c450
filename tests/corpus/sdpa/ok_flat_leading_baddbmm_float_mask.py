# attnprep: sdpa
# expect: passed
"""Leading dims flattened so 3-D and 4-D inputs share one baddbmm path; a float mask used as the
baddbmm input (beta=1), a bool mask turned into a -inf bias; the own softmax via logsumexp-free max."""
import math
import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    *lead, L, E = query.shape
    S, Ev = key.shape[-2], value.shape[-1]
    scale = 1 / math.sqrt(E) if scale is None else scale
    bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        bias = bias.masked_fill(torch.ones(L, S, dtype=torch.bool, device=query.device).tril().logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias + torch.zeros_like(attn_mask, dtype=query.dtype).masked_fill(~attn_mask, float("-inf"))
        else:
            bias = bias + attn_mask
    bias = bias.expand(*lead, L, S).reshape(-1, L, S)
    q = query.reshape(-1, L, E)
    k = key.expand(*lead, S, E).reshape(-1, S, E)
    v = value.expand(*lead, S, Ev).reshape(-1, S, Ev)
    s = torch.baddbmm(bias, q, k.transpose(1, 2), beta=1.0, alpha=scale)
    return torch.bmm(softmax(s, -1), v).reshape(*lead, L, Ev)
