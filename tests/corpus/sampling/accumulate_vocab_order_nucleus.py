# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_not_sorted
"""itertools.accumulate habits: the nucleus is "the prefix whose running total reaches p", the running
total written as torch.cumsum the way accumulate() walks a list; top-k by kthvalue. The running
total walks the probabilities in vocabulary order, never sorted, so the kept prefix is the first
tokens of the vocabulary, not the most probable ones."""

import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    z = logits / temperature
    if top_k > 0:
        kth = -torch.kthvalue(-z, top_k, dim=-1, keepdim=True).values
        z = z.masked_fill(z < kth, float("-inf"))
    if top_p < 1.0:
        p = z.softmax(-1)
        running = torch.cumsum(p, dim=-1)
        z = z.masked_fill(running - p >= top_p, float("-inf"))
    return z.softmax(-1)
# bug-line: 19, 20
