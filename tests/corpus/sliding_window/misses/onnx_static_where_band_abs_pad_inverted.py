# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal + padding_mask_inverted
"""Export-friendly code (ONNX / TensorRT): the mask made of integer arithmetic on two aranges and
torch.where chains, a missing padding mask replaced by a tensor of ones instead of a Python branch in
the traced path; comments name the ONNX op each line becomes."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    pos = torch.arange(seq_len, device=device)                     # Range
    dist = pos[:, None] - pos[None, :]                             # Sub (i - j)
    return torch.abs(dist) < window


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    if attention_mask is None:
        attention_mask = torch.ones(B, T, dtype=torch.bool, device=q.device)  # ConstantOfShape
    band = sliding_window_mask(T, window, device=q.device)                   # (T, T)
    pad = attention_mask.to(torch.int64)[:, None, None, :]                   # Cast + Unsqueeze
    allowed = band[None, None] & (pad == 0)
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(D))      # MatMul + Mul
    neg = torch.full_like(scores, -1e9)                                       # ConstantOfShape
    scores = torch.where(allowed, scores, neg)                                # Where
    return torch.matmul(torch.softmax(scores, dim=-1), v)                     # Softmax + MatMul
# bug-line: 15, 24
