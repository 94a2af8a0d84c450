# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_before_top_k + sampling_not_renormalised
"""Two mistakes: top-p on the full distribution before top-k, and the zeroed probabilities never
renormalised."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    probs = torch.softmax(logits / temperature, dim=-1)
    keep = torch.ones_like(probs, dtype=torch.bool)
    if top_p < 1.0:
        s, order = probs.sort(-1, descending=True)
        nucleus = (s.cumsum(-1) - s) < top_p
        keep &= torch.zeros_like(nucleus).scatter(-1, order, nucleus)
    if top_k > 0:
        keep &= probs >= probs.topk(top_k, dim=-1).values[:, -1:]
    return probs * keep
