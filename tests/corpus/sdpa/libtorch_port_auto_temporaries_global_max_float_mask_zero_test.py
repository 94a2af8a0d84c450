# attnprep: sdpa
# expect: mask_leak
# diagnosis: softmax_global_max + float_mask_as_bool
"""A port of libtorch C++ (ATen's math SDPA read line by line): `auto`-style temporaries named as in
the C++ (attn_bias_, scale_factor, at::-qualified calls in the comments), .contiguous() before
each matmul, new_full for the bias; the softmax shifted by the whole tensor's max, and a float
attn_mask read as a 0/1 mask."""
import math

import torch


def softmax(x, dim=-1):
    # auto max = x.max();  (at::max of the whole tensor)
    shift = x.max()
    e = torch.exp(x - shift)  # at::exp
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L = query.size(-2)
    S = key.size(-2)
    scale_factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale  # auto scale_factor
    attn_bias_ = query.new_full((L, S), 0.0)  # at::zeros({L, S}, query.options())
    if is_causal:
        temp_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(0)  # at::ones(...).tril(0)
        attn_bias_ = attn_bias_.masked_fill(temp_mask.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias_ = attn_bias_.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias_ = attn_bias_.masked_fill(attn_mask == 0, float("-inf"))
    attn_weight = query.contiguous() @ key.transpose(-2, -1).contiguous() * scale_factor  # at::matmul
    attn_weight = softmax(attn_weight + attn_bias_, dim=-1)
    return attn_weight @ value.contiguous()
# bug-line: 15, 32
