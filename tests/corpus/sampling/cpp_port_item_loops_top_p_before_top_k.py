# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_before_top_k
"""A C++ sampler ported line by line (llama.cpp's sampler chain flavour): per row, a sorted candidate
list walked with `.item()` and integer indices, the top-k cut on the candidate count, then the nucleus cut by a
running float sum over the kept candidates, a keep flag per token."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    B, V = logits.shape
    scaled = logits / temperature
    keep = torch.zeros(B, V, dtype=torch.bool, device=logits.device)
    for b in range(B):
        probs = torch.softmax(scaled[b], dim=-1)
        order = torch.argsort(probs, descending=True)
        n_keep = V
        if top_k > 0:
            n_keep = min(top_k, V)
        if top_p < 1.0:
            kept_mass = probs[order[:n_keep]].sum().item()
            cum = 0.0
            for i in range(n_keep):
                cum += probs[order[i]].item()
                if cum >= top_p:
                    n_keep = i + 1
                    break
        for i in range(n_keep):
            keep[b, order[i].item()] = True
    return torch.softmax(scaled.masked_fill(~keep, float("-inf")), dim=-1)
# bug-line: 24
