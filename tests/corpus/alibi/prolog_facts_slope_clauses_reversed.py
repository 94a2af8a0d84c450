# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_reversed
"""A Prolog programmer's facts and rules: slope facts asserted into a list of (head, slope) tuples
by a recursive-looking rule over head indices, queried with a findall-like comprehension; the
power-of-two rule and the interleaved extra slopes as the paper's code; the query sorts the facts
by head in descending order before collecting them."""
import math

import torch


def closest_power_of_two(n):
    return 2 ** math.floor(math.log2(n))


def slope_facts(num_heads):
    # slope(H, S) :- H in 1..n, S is 2^(-8H/n).
    n = closest_power_of_two(num_heads)
    facts = [(h - 1, 2.0 ** (-8.0 * h / n)) for h in range(1, n + 1)]
    # extra(H, S) :- H in 1..num_heads-n, S is 2^(-4(2H-1)/n).
    facts += [(n + h - 1, 2.0 ** (-4.0 * (2 * h - 1) / n)) for h in range(1, num_heads - n + 1)]
    return facts


def findall(facts, descending):
    return [s for _, s in sorted(facts, key=lambda f: f[0], reverse=descending)]


def alibi_slopes(num_heads):
    return torch.tensor(findall(slope_facts(num_heads), descending=True), dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(q.device)
    i = torch.arange(T, device=q.device)[:, None]
    j = torch.arange(T, device=q.device)[None, :]
    distance = (i - j).to(q.dtype)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) - slopes[:, None, None] * distance
    blocked = j > i
    if attention_mask is not None:
        blocked = blocked | ~attention_mask[:, None, None, :]
    scores = scores.masked_fill(blocked, float("-inf"))
    return scores.softmax(-1) @ v
# bug-line: 31
