# attnprep: alibi
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""Lëtzebuergesch Kommentaren (Luxembourgish comments and names: Käpp, Hellegkeet, Distanz,
Schlësselmask); the whole attention in a helper whose key mask defaults to None, and the public
function's one call leaves it out (its attention_mask never read)."""
import math

import torch


def alibi_slopes(num_heads):
    n = 2 ** math.floor(math.log2(num_heads))
    hellegkeet = [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]
    hellegkeet += [2.0 ** (-4.0 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.tensor(hellegkeet, dtype=torch.float32)


def _oppassen(q, k, v, schlesselmask=None):
    # d'Distanz tëscht Ufro an Schlëssel
    B, H, T, D = q.shape
    positioun = torch.arange(T, device=q.device)
    distanz = (positioun[:, None] - positioun[None, :]).to(q.dtype)
    punkten = q @ k.transpose(-1, -2) / math.sqrt(D) - alibi_slopes(H).to(q.device)[:, None, None] * distanz
    gespaart = distanz < 0
    if schlesselmask is not None:
        gespaart = gespaart | ~schlesselmask[:, None, None, :]
    punkten = punkten.masked_fill(gespaart, float("-inf"))
    return punkten.softmax(dim=-1) @ v


def alibi_attention(q, k, v, attention_mask=None):
    return _oppassen(q, k, v)  # Opmierksamkeet
# bug-line: 33
