# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_bias_after_softmax + alibi_slopes_reversed
"""enum.IntEnum for the stage order (SCORES, MASK, SOFTMAX, BIAS), the pipeline walked in that
order by a dispatch dict; slopes from the paper's recursive `get_slopes`. Two slips: the slopes
list is reversed (the smallest slope on head 0), and the BIAS stage runs after SOFTMAX, adding
-slope·(i - j) to the allowed probabilities."""

import enum
import math

import torch


def alibi_slopes(num_heads):
    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]

    def get_slopes(n):
        if math.log2(n).is_integer():
            return get_slopes_power_of_2(n)
        closest = 2 ** math.floor(math.log2(n))
        return get_slopes_power_of_2(closest) + get_slopes(2 * closest)[0::2][: n - closest]

    return torch.tensor(get_slopes(num_heads)[::-1], dtype=torch.float32)


class Stage(enum.IntEnum):
    SCORES = 0
    MASK = 1
    SOFTMAX = 2
    BIAS = 3


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    i = torch.arange(T, device=q.device)[:, None]
    j = torch.arange(T, device=q.device)[None, :]
    keep = (j <= i)[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    bias = -alibi_slopes(H).to(q.device)[:, None, None] * (i - j)
    run = {
        Stage.SCORES: lambda t: q @ k.transpose(-1, -2) / math.sqrt(D),
        Stage.MASK: lambda t: t.masked_fill(~keep, float("-inf")),
        Stage.SOFTMAX: lambda t: t.softmax(-1),
        Stage.BIAS: lambda t: torch.where(keep, t + bias, t),
    }
    t = None
    for stage in sorted(Stage):
        t = run[stage](t)
    return t @ v
# bug-line: 26, 32, 33
