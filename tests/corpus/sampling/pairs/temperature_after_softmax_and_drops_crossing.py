# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_after_softmax + top_p_drops_crossing
"""Two mistakes: the temperature divides the probabilities (and cancels), and top-p removes the
token that crosses top_p (the first one kept)."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    p = torch.softmax(logits, -1) / temperature
    p = p / p.sum(-1, keepdim=True)
    if top_k > 0:
        p = torch.where(p >= p.topk(top_k, -1).values[:, -1:], p, 0.0)
        p = p / p.sum(-1, keepdim=True)
    if top_p < 1.0:
        s, idx = p.sort(-1, descending=True)
        drop = s.cumsum(-1) > top_p
        drop[:, 0] = False
        p = p.masked_fill(drop.scatter(-1, idx, drop), 0.0)
        p = p / p.sum(-1, keepdim=True)
    return p
