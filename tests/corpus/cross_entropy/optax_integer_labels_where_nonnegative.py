# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: ignore_index_hardcoded
"""optax's softmax_cross_entropy_with_integer_labels ported to torch (log_softmax by hand through a
`logsumexp`-free max shift, take_along_axis), the mask for padding written as optax users write it,
`where=labels >= 0`, then a masked mean."""
import torch


def softmax_cross_entropy_with_integer_labels(logits, labels):
    shifted = logits - logits.amax(axis=-1, keepdims=True)
    log_z = torch.log(torch.exp(shifted).sum(-1, keepdim=True))
    log_probs = shifted - log_z
    label_logp = torch.take_along_dim(log_probs, labels.clamp(min=0)[..., None], dim=-1)[..., 0]
    return -label_logp, -log_probs.mean(-1)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    x = logits.float()
    nll, uniform = softmax_cross_entropy_with_integer_labels(x, targets)
    loss = (1.0 - label_smoothing) * nll + label_smoothing * uniform
    where = targets >= 0
    loss = torch.where(where, loss, torch.zeros_like(loss))
    return (loss.sum() / where.sum()).to(logits.dtype)
# bug-line: 22
