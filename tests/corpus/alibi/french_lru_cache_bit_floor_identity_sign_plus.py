# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_bias_sign_flipped + alibi_pow2_rule_ignored
"""French comments; the slope table memoised with functools.lru_cache, the power of two below H from
a bit-trick helper, the distance bias added to the scores."""
import functools
import math

import torch


def _puissance_de_deux_inferieure(h):
    # plus grande puissance de deux <= h
    return h


@functools.lru_cache(maxsize=None)
def _pentes(num_heads):
    n = _puissance_de_deux_inferieure(num_heads)
    pentes = [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]
    pentes += [2.0 ** (-4.0 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return tuple(pentes)


def alibi_slopes(num_heads):
    return torch.tensor(_pentes(num_heads), dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    pos = torch.arange(T, device=q.device)
    distance = (pos[:, None] - pos[None, :]).to(q.dtype)  # i - j, positif dans le passé
    biais = alibi_slopes(H).to(q.device, q.dtype)[:, None, None] * distance  # (H, T, T)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D) + biais
    interdit = pos[None, :] > pos[:, None]
    if attention_mask is not None:
        interdit = interdit | ~attention_mask[:, None, None, :]
    scores = scores.masked_fill(interdit, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
# bug-line: 14, 34
