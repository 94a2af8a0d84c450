# attnprep: attention_backward
# expect: error
# diagnosis: dk_not_transposed + backward_causal_mask_ignored
"""Hrvatski komentari (Croatian comments and names: upiti, kljucevi, vrijednosti, gradijent,
vjerojatnosti); the forward's probabilities recomputed in a helper whose causal flag has a default
the caller relies on (False), and dk computed from dS instead of its transpose."""
import math

import torch


def _vjerojatnosti(q, k, skala, uzrocno=False):
    # ponovno izracunaj vjerojatnosti naprijed
    rezultati = torch.einsum("bhld,bhsd->bhls", q, k) * skala
    if uzrocno:
        L, S = rezultati.shape[-2:]
        buducnost = torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1)
        rezultati = rezultati.masked_fill(buducnost, float("-inf"))
    return torch.softmax(rezultati, dim=-1)


def attention_backward(q, k, v, dout, is_causal=False):
    skala = q.shape[-1] ** -0.5
    P = _vjerojatnosti(q, k, skala)  # oslanja se na zadanu vrijednost
    dv = torch.einsum("bhls,bhld->bhsd", P, dout)  # gradijent vrijednosti
    dP = torch.einsum("bhld,bhsd->bhls", dout, v)
    redak = (dP * P).sum(dim=-1, keepdim=True)
    dS = P * (dP - redak) * skala
    dq = torch.einsum("bhls,bhsd->bhld", dS, k)
    dk = torch.einsum("bhls,bhld->bhsd", dS.transpose(-2, -1), q)
    return dq, dk, dv
# bug-line: 24, 30
