# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""JAX-flavoured pure filters: every function returns a new array, jnp.where spelled torch.where, no in-place op."""
import torch

NEG_INF = float("-inf")


def top_k_mask(logits, top_k):
    vals = torch.sort(logits, dim=-1, descending=True).values
    threshold = vals[..., top_k - 1 : top_k]
    return torch.where(logits < threshold, False, True)


def top_p_mask(logits, top_p):
    order = torch.argsort(logits, dim=-1, descending=True)
    sorted_probs = torch.take_along_dim(torch.softmax(logits, dim=-1), order, dim=-1)
    cum = torch.cumsum(sorted_probs, dim=-1)
    keep_sorted = cum < top_p
    inverse = torch.argsort(order, dim=-1)
    return torch.take_along_dim(keep_sorted, inverse, dim=-1)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    scaled = logits / temperature
    keep = torch.ones_like(scaled, dtype=torch.bool)
    if top_k > 0:
        keep = keep & top_k_mask(scaled, top_k)
    if top_p < 1.0:
        keep = keep & top_p_mask(torch.where(keep, scaled, NEG_INF), top_p)
    return torch.softmax(torch.where(keep, scaled, NEG_INF), dim=-1)
# bug-line: 20
