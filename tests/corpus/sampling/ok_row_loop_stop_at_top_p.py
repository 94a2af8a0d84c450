# attnprep: sampling
# expect: passed
"""Correct: one row at a time with torch ops on 1-D tensors, a stopping loop over the sorted probabilities for top-p
(the llama.c way: stop once the cumulative mass reaches top_p)."""
import torch


def _row(z, top_k, top_p):
    V = z.numel()
    if top_k > 0:
        vals, _ = torch.topk(z, top_k)
        z = torch.where(z >= vals[-1], z, torch.tensor(float("-inf"), dtype=z.dtype, device=z.device))
    probs = torch.softmax(z, 0)
    if top_p < 1.0:
        sp, order = torch.sort(probs, descending=True)
        cum, n = 0.0, 0
        for i in range(V):
            n = i + 1
            cum += float(sp[i])
            if cum >= top_p:
                break
        keep = torch.zeros(V, dtype=torch.bool, device=z.device)
        keep[order[:n]] = True
        probs = torch.where(keep, probs, torch.zeros_like(probs))
        probs = probs / probs.sum()
    return probs


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    return torch.stack([_row(r / temperature, top_k, top_p) for r in logits])
