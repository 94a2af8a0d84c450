# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing + sampling_not_renormalised
"""vLLM-style probs path: top-p keeps only tokens whose cumulative sum stays below top_p (the crossing
token dropped), and the kept probabilities are zeroed in place, never renormalised."""

import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_k > 0:
        kth = probs.topk(top_k, dim=-1).values[..., -1:]
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
    if top_p < 1.0:
        sorted_p, idx = probs.sort(dim=-1, descending=True)
        cum = sorted_p.cumsum(-1)
        keep = cum <= top_p
        keep[..., 0] = True
        sorted_p = sorted_p * keep
        probs = torch.zeros_like(probs).scatter(-1, idx, sorted_p)
    return probs
