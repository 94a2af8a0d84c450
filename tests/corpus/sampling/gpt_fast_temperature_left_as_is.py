# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_after_softmax
"""gpt-fast-like, with the temperature line left as `logits = logits` (the division was meant to
come on the probabilities and never does): every temperature samples as T = 1."""
import torch
import torch.nn.functional as F


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits  # / temperature: applied to the probabilities at the end
    if top_k > 0:
        pivot = torch.topk(logits, top_k).values[..., -1:]
        logits = torch.where(logits < pivot, float("-inf"), logits)
    if top_p < 1.0:
        sorted_logits, sorted_idx = torch.sort(logits, descending=True)
        probs_sorted = F.softmax(sorted_logits, dim=-1)
        drop = probs_sorted.cumsum(-1) - probs_sorted >= top_p
        logits = logits.masked_fill(drop.scatter(-1, sorted_idx, drop), float("-inf"))
    return F.softmax(logits, dim=-1)
# bug-line: 11
