# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""Top-p by binary search: the sorted cumulative distribution is searched with torch.searchsorted
for top_p, which gives per row how many of the sorted tokens to keep; top-k the same way, by a
count. No scatter: the kept set is a threshold on the probability of the last kept token."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits / temperature
    B, V = logits.shape
    if top_k > 0:
        kth = logits.sort(dim=-1, descending=True).values[:, top_k - 1 : top_k]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        probs = torch.softmax(logits, dim=-1)
        sorted_probs, _ = probs.sort(dim=-1, descending=True)
        cdf = sorted_probs.cumsum(dim=-1)
        target = torch.full((B, 1), top_p, dtype=cdf.dtype, device=cdf.device)
        n_keep = torch.searchsorted(cdf, target, right=True)
        n_keep = n_keep.clamp(1, V)
        threshold = sorted_probs.gather(-1, n_keep - 1)  # the smallest kept probability
        logits = logits.masked_fill(probs < threshold, float("-inf"))
    return torch.softmax(logits, dim=-1)
# bug-line: 21
