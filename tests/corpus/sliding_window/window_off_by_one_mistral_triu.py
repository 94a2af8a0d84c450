# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""Mistral one_file_ref as remembered: triu(mask, diagonal=-sliding_window) keeps window + 1 keys."""
import math

import torch


def _additive_mask(seqlen: int, sliding_window: int, device=None) -> torch.Tensor:
    mask = torch.full((seqlen, seqlen), fill_value=1.0, device=device)
    mask = torch.tril(mask, diagonal=0)
    mask = torch.triu(mask, diagonal=-sliding_window)
    return torch.log(mask)  # 0 where allowed, -inf elsewhere


def sliding_window_mask(seq_len, window, device=None):
    return _additive_mask(seq_len, window, device) == 0


def sliding_window_attention(q, k, v, window, attention_mask=None):
    bsz, n_heads, seqlen, head_dim = q.shape
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(head_dim)
    scores = scores + _additive_mask(seqlen, window, q.device).to(scores.dtype)
    if attention_mask is not None:
        pad = torch.zeros(attention_mask.shape, dtype=scores.dtype, device=q.device)
        pad = pad.masked_fill(~attention_mask, float("-inf"))
        scores = scores + pad[:, None, None, :]
    scores = torch.softmax(scores.float(), dim=-1).type_as(q)
    return torch.matmul(scores, v)
# bug-line: 13
