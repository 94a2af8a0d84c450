# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_not_sorted
"""torch.where all the way, no masked_fill: the nucleus is read off a cumulative sum taken in
vocabulary order, without sorting the probabilities first."""
import torch

NEG = float("-inf")


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    z = logits / temperature
    if top_k > 0:
        kth = torch.topk(z, top_k, dim=-1).values[..., -1, None]
        z = torch.where(z < kth, torch.full_like(z, NEG), z)
    if top_p < 1.0:
        p = torch.softmax(z, dim=-1)
        mass_before = torch.cumsum(p, dim=-1) - p
        z = torch.where(mass_before < top_p, z, torch.full_like(z, NEG))
    return torch.softmax(z, dim=-1)
# bug-line: 18
