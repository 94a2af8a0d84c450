# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_before_top_k
"""In-place everywhere (clone once, then masked_fill_ and div_), the nucleus cut before the top-k
one: with top_k or top_p alone it is right."""
import torch


def sampling_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0,
                   top_p: float = 1.0) -> torch.Tensor:
    z = logits.clone()
    z.div_(temperature)
    if top_p < 1.0:
        p_sorted, order = z.softmax(-1).sort(-1, descending=True)
        drop_sorted = p_sorted.cumsum(-1).sub_(p_sorted) >= top_p
        drop = torch.empty_like(drop_sorted).scatter_(-1, order, drop_sorted)
        z.masked_fill_(drop, float("-inf"))
    if top_k > 0:
        kth = z.topk(top_k, dim=-1).values[:, -1:]
        z.masked_fill_(z < kth, float("-inf"))
    return z.softmax(-1)
# bug-line: 14
