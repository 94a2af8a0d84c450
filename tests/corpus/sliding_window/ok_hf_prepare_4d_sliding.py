# attnprep: sliding_window
# expect: passed
"""Hugging Face Mistral / Qwen2's path before SDPA: _prepare_4d_causal_attention_mask(attention_mask,
input_shape, inputs_embeds, past_key_values_length, sliding_window) re-written here as a local
function returning the (B, 1, T, T) additive float mask with torch.finfo(dtype).min, the sliding
window cut with `diagonal=-sliding_window` as AttentionMaskConverter does: correct."""

import math

import torch


def _prepare_4d_causal_attention_mask(attention_mask, input_shape, dtype, device, past_key_values_length=0,
                                      sliding_window=None):
    bsz, tgt_len = input_shape
    min_dtype = torch.finfo(dtype).min
    mask = torch.full((tgt_len, tgt_len), min_dtype, device=device)
    mask_cond = torch.arange(mask.size(-1), device=device)
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    if sliding_window is not None:
        diagonal = past_key_values_length - sliding_window
        context_mask = torch.tril(torch.ones_like(mask, dtype=torch.bool), diagonal=diagonal)
        mask.masked_fill_(context_mask, min_dtype)
    mask = mask.to(dtype)[None, None].expand(bsz, 1, tgt_len, tgt_len)
    if attention_mask is not None:
        inverted = ~attention_mask[:, None, None, :].expand(bsz, 1, tgt_len, tgt_len)
        mask = mask.masked_fill(inverted, min_dtype)
    return mask


def sliding_window_mask(seq_len, window, device=None):
    m = _prepare_4d_causal_attention_mask(None, (1, seq_len), torch.float32, device, sliding_window=window)
    return m[0, 0] == 0


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    mask = _prepare_4d_causal_attention_mask(attention_mask, (B, T), q.dtype, q.device, sliding_window=window)
    attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(D) + mask
    attn_weights = torch.softmax(attn_weights.float(), dim=-1).to(q.dtype)
    return torch.matmul(attn_weights, v)
