# attnprep: sdpa
# expect: mask_leak
# diagnosis: softmax_global_max + float_mask_multiplied
"""A class of staticmethods (K.softmax, K.bias, K.sdpa) with thin module-level functions over it.
Two slips, one per function: the softmax subtracts the max of the whole tensor instead of each row's,
and a float attn_mask is multiplied into the scores where torch adds it."""

import math

import torch


class K:
    @staticmethod
    def softmax(x, dim):
        e = torch.exp(x - x.max())
        return e / e.sum(dim=dim, keepdim=True)

    @staticmethod
    def sdpa(q, k, v, attn_mask, is_causal, scale):
        L, S = q.shape[-2], k.shape[-2]
        s = (q @ k.transpose(-2, -1)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
        if is_causal:
            s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=q.device).tril(), float("-inf"))
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                s = s.masked_fill(~attn_mask, float("-inf"))
            else:
                s = s * attn_mask
        return K.softmax(s, -1) @ v


def softmax(x, dim=-1):
    return K.softmax(x, dim)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    return K.sdpa(query, key, value, attn_mask, is_causal, scale)
# bug-line: 16, 29
