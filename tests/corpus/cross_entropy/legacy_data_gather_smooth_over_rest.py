# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1
"""PyTorch 0.4-era habits: `torch.max(x, -1, keepdim=True)[0]`, `.data`-free but `.type_as`, a
`true_dist` built with `fill_(smoothing / (size - 1))` and `scatter_(1, target.unsqueeze(1),
confidence)` as the Annotated Transformer's LabelSmoothing does, then the KL-like sum
-(true_dist * logp). The smoothing mass is spread over the other V - 1 classes, where torch spreads
ε over all V (the target included)."""

import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    size = logits.size(-1)
    x = logits.contiguous().view(-1, size).float()
    target = targets.contiguous().view(-1)
    valid = (target != ignore_index)
    x_max = torch.max(x, -1, keepdim=True)[0]
    logp = x - x_max - torch.log(torch.sum(torch.exp(x - x_max), -1, keepdim=True))
    confidence = 1.0 - label_smoothing
    true_dist = torch.zeros_like(logp)
    true_dist.fill_(label_smoothing / (size - 1))
    safe = target.masked_fill(~valid, 0)
    true_dist.scatter_(1, safe.unsqueeze(1), confidence)
    loss = -(true_dist * logp).sum(-1)
    loss = loss.masked_fill(~valid, 0.0)
    return (loss.sum() / valid.sum().type_as(loss)).type_as(logits)
# bug-line: 22, 24
