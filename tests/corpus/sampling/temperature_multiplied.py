# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_multiplied
"""logits * temperature: T < 1 flattens instead of sharpening."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits * temperature
    if top_k > 0:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        probs = torch.softmax(logits, dim=-1)
        s, i = probs.sort(dim=-1, descending=True)
        remove = (s.cumsum(dim=-1) - s) >= top_p
        logits = logits.masked_fill(remove.scatter(-1, i, remove), float("-inf"))
    return torch.softmax(logits, dim=-1)
