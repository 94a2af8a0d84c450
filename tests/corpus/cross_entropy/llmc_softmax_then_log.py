# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_softmax_then_log
"""Karpathy's llm.c reference habits (train_gpt2.c's softmax_forward then crossentropy_forward, as
its Python test mirrors them): a `softmax_forward` with the row max subtracted, then
`crossentropy_forward` taking -log of the target's probability; ignore_index and label smoothing added
around it with the same probabilities. The log is taken of probabilities that underflow to 0."""

import torch


def softmax_forward(logits):
    maxval = logits.max(dim=-1, keepdim=True).values
    exps = torch.exp(logits - maxval)
    return exps / exps.sum(dim=-1, keepdim=True)


def crossentropy_forward(logits, targets, ignore_index, label_smoothing):
    keep = targets != ignore_index
    probs = softmax_forward(logits)  # (N, V)
    logp = torch.log(probs)  # (N, V)
    safe = torch.where(keep, targets, torch.zeros_like(targets))
    losses = -logp.gather(1, safe.unsqueeze(1)).squeeze(1)
    if label_smoothing > 0:
        losses = (1 - label_smoothing) * losses - label_smoothing * logp.mean(dim=1)
    losses = torch.where(keep, losses, torch.zeros_like(losses))
    return losses.sum() / keep.sum()


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    return crossentropy_forward(logits.reshape(-1, V), targets.reshape(-1), ignore_index, label_smoothing)
# bug-line: 21
