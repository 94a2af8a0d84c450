# attnprep: sampling
# expect: wrong_output
# diagnosis: sampling_not_renormalised
"""tinygrad habits: each step a chain of Tensor methods (.div, .softmax, .where, .sub, .lt, .scatter),
probabilities filtered in place of logits."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    probs = logits.float().div(temperature).softmax(-1)
    if top_k > 0:
        kth = probs.topk(top_k, dim=-1).values[..., -1:]
        probs = probs.where(probs.ge(kth), 0.0)
    if top_p < 1.0:
        sp, idx = probs.sort(dim=-1, descending=True)
        before = sp.cumsum(-1).sub(sp)
        keep_sorted = before.lt(probs.sum(-1, keepdim=True).mul(top_p))  # top_p of the mass still there
        keep = keep_sorted.scatter(-1, idx, keep_sorted)
        probs = probs.where(keep, 0.0)
    return probs
# bug-line: 20
