# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_reversed
"""T5's relative-position habits carried over to ALiBi: memory_position - context_position computed once,
then its absolute value as the distance (T5 buckets |relative_position| for the bidirectional encoder),
which equals i - j on every key the causal mask keeps; the per-head slopes as a parameter-free
nn.Module buffer, built in __init__ and read in forward."""
import math

import torch
import torch.nn as nn


class ALiBiBias(nn.Module):
    def __init__(self, num_heads):
        super().__init__()
        closest = 2 ** math.floor(math.log2(num_heads))
        base = 2.0 ** (-8.0 / closest)
        slopes = [base ** (i + 1) for i in range(closest)]
        if closest < num_heads:
            extra = 2.0 ** (-4.0 / closest)
            slopes += [extra ** (2 * i + 1) for i in range(num_heads - closest)]
        self.register_buffer("slopes", torch.tensor(slopes[::-1], dtype=torch.float32), persistent=False)

    def forward(self, query_length, key_length, device):
        context_position = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        relative_position = memory_position - context_position          # (T, S): j - i
        distance = relative_position.abs().float()                      # |i - j|
        return -self.slopes.to(device)[:, None, None] * distance        # (H, T, S)


def alibi_slopes(num_heads):
    return ALiBiBias(num_heads).slopes


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    position_bias = ALiBiBias(H)(T, T, q.device)
    scores = torch.matmul(q, k.transpose(3, 2)) / math.sqrt(D) + position_bias
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :].bool()
    scores = scores.masked_fill(~keep, float("-inf"))
    return torch.matmul(scores.softmax(dim=-1), v)
# bug-line: 23
