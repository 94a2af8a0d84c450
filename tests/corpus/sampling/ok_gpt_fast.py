# attnprep: sampling
# expect: passed
"""gpt-fast's logits_to_probs (temperature and top-k with torch.where on a pivot), with a top-p
added the same way: a descending sort and a shifted mask."""
from typing import Optional

import torch


def logits_to_probs(logits, temperature: float = 1.0, top_k: Optional[int] = None, top_p: Optional[float] = None):
    logits = logits / max(temperature, 1e-5)

    if top_k is not None:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        pivot = v.select(-1, -1).unsqueeze(-1)
        logits = torch.where(logits < pivot, -float("Inf"), logits)
    if top_p is not None:
        sorted_logits, sorted_idx = torch.sort(logits, descending=True)
        cum = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)
        drop = cum > top_p
        drop[..., 1:] = drop[..., :-1].clone()  # shift right: keep the token that crosses top_p
        drop[..., 0] = False
        drop = drop.scatter(-1, sorted_idx, drop)
        logits = logits.masked_fill(drop, -float("Inf"))
    probs = torch.nn.functional.softmax(logits, dim=-1)
    return probs


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    return logits_to_probs(logits, temperature, top_k or None, top_p if top_p < 1.0 else None)
