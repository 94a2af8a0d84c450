# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""Top-p with itertools.accumulate over each row's sorted probabilities (Python floats, one row at a
time, as a reference implementation for a C++ port), top-k with torch.topk; the nucleus stops
before the token that crosses top_p."""
import itertools

import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    z = logits / temperature
    if top_k > 0:
        kth = torch.topk(z, top_k, dim=-1).values[..., -1, None]
        z = z.masked_fill(z < kth, float("-inf"))
    if top_p < 1.0:
        probs = torch.softmax(z, dim=-1)
        keep = torch.zeros_like(z, dtype=torch.bool)
        for row in range(z.shape[0]):
            p_sorted, order = torch.sort(probs[row], descending=True)
            running = list(itertools.accumulate(p_sorted.tolist()))
            n_keep = sum(1 for c in running if c < top_p)
            n_keep = max(n_keep, 1)
            keep[row, order[:n_keep]] = True
        z = z.masked_fill(~keep, float("-inf"))
    return torch.softmax(z, dim=-1)
# bug-line: 23
