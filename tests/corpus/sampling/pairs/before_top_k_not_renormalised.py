# attnprep: sampling
# expect: wrong_output
# diagnosis: sampling_not_renormalised
"""Top-p on the full distribution before top-k, and the zeroed probabilities never renormalised. Without
any renormalisation the order is moot: top-k then top-p on the probabilities left keeps the same
tokens (the top-k are the head of the sorted distribution), so only the one mistake that changes the
outputs is named (sampling_not_renormalised:probs), not an order the outputs cannot tell."""
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
