# attnprep: sliding_window
# expect: passed
"""Correct: the band as a sum of sub-diagonals (torch.diag of ones for offsets 0 .. -(w-1)),
attention through a float additive bias with torch.log of the 0/1 mask."""
import math
import torch


def sliding_window_mask(seq_len, window, device=None):
    m = torch.zeros(seq_len, seq_len, device=device)
    for k in range(min(window, seq_len)):
        m = m + torch.diag(torch.ones(seq_len - k, device=device), -k)
    return m > 0


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    keep = sliding_window_mask(T, window, q.device).float()[None, None]
    if attention_mask is not None:
        keep = keep * attention_mask[:, None, None, :].float()
    s = q @ k.transpose(-1, -2) / math.sqrt(D) + torch.log(keep)   # log 0 = -inf
    return torch.softmax(s, -1) @ v
