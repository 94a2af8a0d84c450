# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""The band as a module-level lambda (BANDA) of a tril / triu chain, Italian comments, the padding
mask AND-ed in and a finfo.min fill."""
import math

import torch

# banda: ogni query vede se stessa e le window - 1 chiavi precedenti
BANDA = lambda T, w, dev: torch.ones(T, T, dtype=torch.bool, device=dev).tril().triu(-w)


def sliding_window_mask(seq_len, window, device=None):
    return BANDA(seq_len, window, device)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    consentito = sliding_window_mask(T, window, q.device)[None, None]  # (1, 1, T, T)
    if attention_mask is not None:
        consentito = consentito & attention_mask[:, None, None, :]
    punteggi = (q @ k.transpose(-2, -1)) / math.sqrt(D)
    punteggi = punteggi.masked_fill(~consentito, torch.finfo(punteggi.dtype).min)
    return torch.softmax(punteggi, dim=-1) @ v
# bug-line: 11
