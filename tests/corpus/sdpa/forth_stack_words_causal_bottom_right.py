# attnprep: sdpa
# expect: mask_leak
# diagnosis: causal_bottom_right
"""A Forth programmer's stack words: values pushed on an explicit list, `dup`, `swap`, `over`,
`drop` helpers, each step a word that pops its arguments and pushes its result; the causal mask's
diagonal offset taken as S - L (bottom-right alignment) instead of torch's top-left."""
import math

import torch


def softmax(x, dim=-1):
    stack = [x]
    stack.append(stack[-1].amax(dim=dim, keepdim=True))  # dup max
    top = stack.pop()
    shifted = stack.pop() - top  # swap -
    e = torch.exp(shifted)
    return e / e.sum(dim=dim, keepdim=True)


def dup(stack):
    stack.append(stack[-1])


def swap(stack):
    stack[-1], stack[-2] = stack[-2], stack[-1]


def over(stack):
    stack.append(stack[-2])


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    stack = [query, key]
    k = stack.pop()
    q = stack.pop()
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    stack.append(q @ k.transpose(-2, -1))
    stack.append(scale if scale is not None else 1.0 / math.sqrt(E))
    s = stack.pop()
    stack.append(stack.pop() * s)
    if is_causal:
        offset = S - L  # ( L S -- S-L )
        allowed = torch.ones(L, S, dtype=torch.bool, device=q.device).tril(diagonal=offset)
        stack.append(stack.pop().masked_fill(~allowed, float("-inf")))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            stack.append(stack.pop().masked_fill(~attn_mask, float("-inf")))
        else:
            stack.append(stack.pop() + attn_mask)
    return softmax(stack.pop(), dim=-1) @ value
# bug-line: 43
