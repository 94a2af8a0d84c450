# attnprep: min_p
# expect: passed
"""The test in log space: log p >= log min_p + log p_max, i.e. logit >= max logit + log(min_p)."""
import math
import torch


def min_p_probs(logits, min_p=0.1, temperature=1.0):
    z = logits / temperature
    keep = z >= z.amax(-1, keepdim=True) + math.log(min_p)
    z = z.masked_fill(~keep, float("-inf"))
    e = (z - z.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)
