# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""Buggy: top-p keeps cumsum < top_p: the token that crosses top_p is dropped. Otherwise correct: Sorted once; the keep mask moved back with the inverse permutation (argsort of the order) and
gather instead of scatter; top-k as the first k of the sorted order."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    z = logits / temperature
    sorted_z, order = z.sort(dim=-1, descending=True)
    V = z.shape[-1]
    rank = torch.arange(V, device=z.device).expand_as(z)
    keep_sorted = torch.ones_like(z, dtype=torch.bool)
    if top_k > 0:
        keep_sorted &= rank < top_k
    if top_p < 1.0:
        p = sorted_z.masked_fill(~keep_sorted, float("-inf")).softmax(-1)
        keep_sorted &= p.cumsum(-1) < top_p
    inv = order.argsort(dim=-1)
    keep = keep_sorted.gather(-1, inv)
    return z.masked_fill(~keep, float("-inf")).softmax(-1)
# bug-line: 19
