# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""The shift forgotten but the first token kept: the crossing token is still dropped."""
import torch
import torch.nn.functional as F


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits / temperature
    if top_k > 0:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = torch.where(logits < kth, torch.full_like(logits, float("-inf")), logits)
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        sorted_indices_to_remove = cumulative_probs > top_p
        sorted_indices_to_remove[..., 0] = False  # always keep the most probable token
        indices_to_remove = torch.zeros_like(sorted_indices_to_remove).scatter(-1, sorted_indices, sorted_indices_to_remove)
        logits = logits.masked_fill(indices_to_remove, float("-inf"))
    return F.softmax(logits, dim=-1)
# bug-line: 17
