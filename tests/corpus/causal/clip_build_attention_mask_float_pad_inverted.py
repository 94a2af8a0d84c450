# attnprep: causal
# expect: mask_leak
# diagnosis: mask_dtype + padding_mask_inverted
"""OpenAI CLIP's build_attention_mask (clip/model.py): `mask = torch.empty(T, T); mask.fill_(
float("-inf")); mask.triu_(1)  # zero out the lower diagonal`, returned as the additive float mask
CLIP hands to its ResidualAttentionBlock, which causal_attention adds to the scores. Two slips, one
per function: causal_mask returns that float mask where the contract wants bool True = allowed, and
causal_attention fills the key columns where attention_mask is True (the real tokens)."""

import math

import torch


def causal_mask(seq_len, device=None):
    # lazily create causal attention mask, with full attention between the vision tokens
    # pytorch uses additive attention mask; fill with -inf
    mask = torch.empty(seq_len, seq_len, device=device)
    mask.fill_(float("-inf"))
    mask.triu_(1)  # zero out the lower diagonal
    return mask


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    attn = (q @ k.transpose(-2, -1)) / math.sqrt(D)
    bias = causal_mask(T, device=q.device)
    if bias.dtype == torch.bool:
        bias = torch.zeros(T, T, device=q.device).masked_fill(~bias, float("-inf"))
    attn = attn + bias.to(attn.dtype)
    if attention_mask is not None:
        attn = attn.masked_fill(attention_mask[:, None, None, :], float("-inf"))
    return attn.softmax(dim=-1) @ v
# bug-line: 21, 32
