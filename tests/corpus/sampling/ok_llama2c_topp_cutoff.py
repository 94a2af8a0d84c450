# attnprep: sampling
# expect: passed
"""Correct: llama2.c's sample_topp per row: tokens under (1 - topp) / (n - 1) dropped first, the rest sorted, cut at the first cumulative sum above topp (kept)."""
import torch


def _topp_row(probs, topp):
    """llama2.c's sample_topp: tokens below (1 - topp) / (n - 1) cannot be in the nucleus; sort the
    rest descending, stop at the first whose cumulative probability exceeds topp (it is kept)."""
    n = probs.numel()
    cutoff = (1.0 - topp) / (n - 1)
    idx = torch.nonzero(probs >= cutoff).flatten()
    vals = probs[idx]
    order = torch.argsort(vals, descending=True)
    idx, vals = idx[order], vals[order]
    cumulative_prob = 0.0
    last_idx = len(idx) - 1
    for i in range(len(idx)):
        cumulative_prob += float(vals[i])
        if cumulative_prob > topp:
            last_idx = i
            break
    keep = torch.zeros_like(probs, dtype=torch.bool)
    keep[idx[: last_idx + 1]] = True
    return keep


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits.float() / temperature
    if top_k > 0:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if top_p < 1.0:
        keep = torch.stack([_topp_row(row, top_p) for row in probs])
        probs = probs * keep
        probs = probs / probs.sum(-1, keepdim=True)
    return probs
