# attnprep: sampling
# expect: passed
"""Interview-notes style on probabilities: temperature as p ** (1 / T) renormalised (the same as
softmax(z / T)), top-k and top-p by zeroing, one renormalisation at the end."""
import torch


def sampling_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    p = torch.softmax(logits, dim=-1)
    p = p ** (1.0 / temperature)
    p = p / p.sum(dim=-1, keepdim=True)
    if top_k > 0:
        kth = p.topk(top_k, dim=-1).values[:, -1:]
        p = torch.where(p >= kth, p, torch.zeros_like(p))
        p = p / p.sum(dim=-1, keepdim=True)
    if top_p < 1.0:
        s, i = p.sort(dim=-1, descending=True)
        mass_before = s.cumsum(-1) - s
        s = torch.where(mass_before < top_p, s, torch.zeros_like(s))
        p = torch.empty_like(p).scatter_(-1, i, s)
    return p / p.sum(dim=-1, keepdim=True)
