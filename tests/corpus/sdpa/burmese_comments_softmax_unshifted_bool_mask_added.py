# attnprep: sdpa
# expect: mask_leak
# diagnosis: softmax_unstable + bool_mask_added
"""Burmese comments; the softmax exponentiates the raw inputs (no max subtracted: large logits
overflow), and a bool attn_mask is added to the scores as numbers (True adds 1, False adds 0)."""
import math

import torch


def softmax(x, dim=-1):
    # ထပ်ညွှန်းကိန်း၊ ပြီးမှ ပေါင်းလဒ်ဖြင့် စား
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        # အကြောင်းရင်းမျဉ်း: အနာဂတ်ကို ဖုံး
        temp_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=0)
        attn_bias = attn_bias.masked_fill(temp_mask.logical_not(), float("-inf"))
    if attn_mask is not None:
        attn_bias = attn_bias + attn_mask
    attn_weight = query @ key.transpose(-2, -1) * scale_factor + attn_bias
    attn_weight = softmax(attn_weight, dim=-1)
    return attn_weight @ value
# bug-line: 13, 26
