# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one + padding_mask_inverted
"""Коментари на српском (Serbian comments in Cyrillic, Latin identifiers: prozor, maska, kljucevi,
vrednosti); the window's lower edge written `i - j <= window` (window + 1 keys), and the key
padding mask used as the blocked set in the attention (where False should block)."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    # индекси упита и кључева
    upiti = torch.arange(seq_len, device=device).view(-1, 1)
    kljucevi = torch.arange(seq_len, device=device).view(1, -1)
    rastojanje = upiti - kljucevi  # колико је кључ иза упита
    return (rastojanje >= 0) & (rastojanje <= window)  # унутар прозора


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T = q.size(-2)
    skorovi = torch.matmul(q, k.transpose(-2, -1)) * q.size(-1) ** -0.5  # скалирани резултати
    maska = sliding_window_mask(T, window, device=q.device)
    skorovi = skorovi.masked_fill(~maska, float("-inf"))
    if attention_mask is not None:
        blokirani = attention_mask[:, None, None, :]  # блокирани кључеви
        skorovi = skorovi.masked_fill(blokirani, float("-inf"))
    verovatnoce = torch.softmax(skorovi, dim=-1)
    return torch.matmul(verovatnoce, v)
# bug-line: 17, 26
