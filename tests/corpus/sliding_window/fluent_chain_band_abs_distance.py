# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal
"""Fluent method chains throughout (`torch.arange(T).unsqueeze(0).sub(...).abs().lt(window)`,
`q.matmul(k.mT).mul(D ** -0.5).masked_fill(...).softmax(-1).matmul(v)`), Tensor.mT for the key
transpose, the padding mask folded in with logical_and. The band is |i - j| < window: the window's
keys after the query are seen too."""

import torch


def sliding_window_mask(seq_len, window, device=None):
    pos = torch.arange(seq_len, device=device)
    return pos.unsqueeze(1).sub(pos.unsqueeze(0)).abs().lt(window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.size(-2), q.size(-1)
    keep = sliding_window_mask(T, window, device=q.device).view(1, 1, T, T)
    if attention_mask is not None:
        keep = keep.logical_and(attention_mask.view(-1, 1, 1, T))
    return (q.matmul(k.mT)
             .mul(D ** -0.5)
             .masked_fill(keep.logical_not(), float("-inf"))
             .softmax(-1)
             .matmul(v))
# bug-line: 14
