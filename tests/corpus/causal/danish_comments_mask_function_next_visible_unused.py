# attnprep: causal
# expect: wrong_output
# diagnosis: causal_leaks_next
"""Danske kommentarer (Danish comments and names: fremtid, tilladt, nøgler, vægte); the attention
builds its own lower triangle from the scores' shape and never calls causal_mask, whose own band
is written tril(diagonal=1) (each query also sees the next key)."""
import math

import torch


def causal_mask(seq_len, device=None):
    # tilladt: nøgle j <= forespørgsel i
    tilladt = torch.ones(seq_len, seq_len, device=device).tril(diagonal=1)
    return tilladt.bool()


def causal_attention(q, k, v, attention_mask=None):
    skala = 1.0 / math.sqrt(q.size(-1))
    vaegte = torch.einsum("bhqd,bhkd->bhqk", q, k) * skala
    fremtid = torch.ones_like(vaegte[0, 0], dtype=torch.bool).triu(1)  # fremtidige nøgler
    vaegte = vaegte.masked_fill(fremtid, float("-inf"))
    if attention_mask is not None:
        vaegte = vaegte.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    return torch.einsum("bhqk,bhkd->bhqd", vaegte.softmax(dim=-1), v)
# bug-line: 14
