# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored
"""A Haskell programmer's habits: small total functions with their type in a comment (geometric ::
Int -> [Double]), helpers as `where` clauses (nested defs), foldr to build the bias, no mutation."""
import math
from functools import reduce

import torch


# floorPow2 :: Int -> Int
def floor_pow2(h):
    return reduce(lambda acc, _: acc * 2 if acc * 2 <= h else acc, range(h), 1)


# geometric :: Int -> [Double]   -- 2^(-8/n), 2^(-16/n), ..
def geometric(n):
    return [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]


# between :: Int -> Int -> [Double]   -- the odd slopes of 2n heads
def between(n, extra):
    return [2.0 ** (-4.0 * (2 * i - 1) / n) for i in range(1, extra + 1)]


# alibiSlopes :: Int -> Tensor
def alibi_slopes(num_heads):
    n = floor_pow2(num_heads)
    xs = geometric(num_heads)
    return torch.tensor(xs, dtype=torch.float32)


# alibiAttention :: Tensor -> Tensor -> Tensor -> Maybe Tensor -> Tensor
def alibi_attention(q, k, v, attention_mask=None):
    def distance(t, device):  # where distance = i - j
        pos = torch.arange(t, device=device)
        return pos[:, None] - pos[None, :]

    def allowed(t, device):  # where allowed = tril, then the keys that are real
        lower = torch.ones(t, t, dtype=torch.bool, device=device).tril()
        return lower if attention_mask is None else lower & attention_mask[:, None, None, :]

    _, h, t, d = q.shape
    m = alibi_slopes(h).to(q.device, q.dtype)[:, None, None]
    logits = q @ k.transpose(-2, -1) / math.sqrt(d) - m * distance(t, q.device).to(q.dtype)
    logits = logits.masked_fill(~allowed(t, q.device), float("-inf"))
    return logits.softmax(-1) @ v
# bug-line: 30
