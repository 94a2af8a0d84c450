# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""vLLM's sampler: `apply_top_k_top_p(logits, k, p)` on an ascending sort (`logits_sort,
logits_idx = logits.sort(dim=-1, descending=False)`), top-k by gathering the k-th largest from the
end, top-p through `probs_sum = probs_sort.cumsum(dim=-1)` and `top_p_mask[:, -1] = False`, then
`scatter` back. The top-p test compares the mass *below* each token (cumsum minus itself) with
1 - p, one token too strict: the token that crosses p is removed."""

import torch


def apply_top_k_top_p(logits, k, p):
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    if k is not None:
        top_k_mask = logits_sort.size(1) - k.to(torch.long)
        top_k_mask = logits_sort.gather(1, top_k_mask.unsqueeze(dim=1))
        top_k_mask = logits_sort < top_k_mask
        logits_sort.masked_fill_(top_k_mask, -float("inf"))
    if p is not None:
        probs_sort = logits_sort.softmax(dim=-1)
        probs_sum = probs_sort.cumsum(dim=-1)
        top_p_mask = (probs_sum - probs_sort) < 1 - p.unsqueeze(dim=1)
        top_p_mask[:, -1] = False
        logits_sort.masked_fill_(top_p_mask, -float("inf"))
    return torch.empty_like(logits_sort).scatter_(dim=-1, index=logits_idx, src=logits_sort)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    B = logits.shape[0]
    logits = logits / temperature
    k = torch.full((B,), top_k, device=logits.device) if top_k > 0 else None
    p = torch.full((B,), top_p, device=logits.device, dtype=logits.dtype) if top_p < 1.0 else None
    return apply_top_k_top_p(logits, k, p).softmax(dim=-1)
# bug-line: 23
