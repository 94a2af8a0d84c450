# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_after_softmax
"""TF-2 / Keras habits (tf.math.top_k as torch.topk, tf.sort(direction="DESCENDING"), `axis=`
wrappers): the softmax is taken first and the temperature applied to the probabilities, then
renormalised, instead of dividing the logits."""

import torch


def tf_top_k(x, k, axis=-1):
    return torch.topk(x, k, dim=axis)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    k = top_k
    probs = torch.softmax(logits, dim=-1)
    probs = probs / temperature
    probs = probs / probs.sum(dim=-1, keepdim=True)
    if k and k > 0:
        kth = tf_top_k(probs, k, axis=-1).values[..., -1:]
        probs = torch.where(probs < kth, torch.zeros_like(probs), probs)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True)
        before = sorted_p.cumsum(dim=-1) - sorted_p
        drop_sorted = before >= top_p
        drop_sorted[..., 0] = False
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs
# bug-line: 18
