# attnprep: sdpa
# expect: passed
"""A Fortran programmer's column-major layout: scores kept as (..., S, L), one query per column, the
softmax taken down each column, O = Pᵀ·V at the end; masks transposed to match."""
import math

import torch


def softmax(x, dim=-1):
    col_max = x.amax(dim=dim, keepdim=True)
    col_max = torch.where(torch.isfinite(col_max), col_max, torch.zeros_like(col_max))
    e = torch.exp(x - col_max)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    st = torch.matmul(key, query.transpose(-2, -1)) * scale  # (..., S, L): column i holds query i
    if is_causal:
        rows_j = torch.arange(S, device=query.device)[:, None]
        cols_i = torch.arange(L, device=query.device)[None, :]
        st = st.masked_fill(rows_j > cols_i, float("-inf"))
    if attn_mask is not None:
        mt = attn_mask.transpose(-2, -1) if attn_mask.dim() >= 2 else attn_mask[..., None]
        if mt.dtype == torch.bool:
            st = st.masked_fill(~mt, float("-inf"))
        else:
            st = st + mt
    pt = softmax(st, dim=-2)  # down each column
    return torch.matmul(pt.transpose(-2, -1), value)
