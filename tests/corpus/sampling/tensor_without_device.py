# attnprep: sampling
# expect: error
# diagnosis: tensor_without_device
"""The keep-mask started with torch.ones(B, V): on the CPU whatever the logits' device."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    B, V = logits.shape
    logits = logits / temperature
    keep = torch.ones(B, V, dtype=torch.bool)
    if top_k > 0:
        keep = keep & (logits >= logits.topk(top_k, -1).values[:, -1:])
    if top_p < 1.0:
        probs = logits.masked_fill(~keep, float("-inf")).softmax(-1)
        s, order = probs.sort(-1, descending=True)
        nucleus = (s.cumsum(-1) - s) < top_p
        keep = keep & nucleus.scatter(-1, order, nucleus)
    return logits.masked_fill(~keep, float("-inf")).softmax(-1)
