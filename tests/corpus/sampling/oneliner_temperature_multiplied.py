# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_multiplied
"""Dense one-liners per stage; the temperature multiplies the logits instead of dividing them."""

import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    z = logits * temperature
    z = z.masked_fill(z < torch.topk(z, top_k).values[:, -1:], float("-inf")) if top_k > 0 else z
    p, idx = z.softmax(-1).sort(-1, descending=True)
    drop = (p.cumsum(-1) - p >= top_p).scatter(-1, idx, (p.cumsum(-1) - p >= top_p)) if top_p < 1.0 else torch.zeros_like(z, dtype=torch.bool)
    return z.masked_fill(drop, float("-inf")).softmax(-1)
# bug-line: 10
