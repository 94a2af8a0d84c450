# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_sum_not_mean
"""Keras' SparseCategoricalCrossentropy as a loss object: from_logits, ignore_class, a reduction string
("sum_over_batch_size" is Keras' mean over the unmasked samples), call(y_true, y_pred) returning the
per-sample losses and __call__ reducing them."""
import torch


class SparseCategoricalCrossentropy:
    def __init__(self, from_logits=True, ignore_class=None, label_smoothing=0.0, reduction="sum"):
        self.from_logits = from_logits
        self.ignore_class = ignore_class
        self.label_smoothing = label_smoothing
        self.reduction = reduction

    def call(self, y_true, y_pred):
        z = y_pred.float()
        z = z - z.amax(dim=-1, keepdim=True)
        log_p = z - z.exp().sum(dim=-1, keepdim=True).log()
        safe = y_true.clamp(min=0, max=z.shape[-1] - 1)
        nll = -log_p.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
        smooth = -log_p.mean(dim=-1)
        return (1.0 - self.label_smoothing) * nll + self.label_smoothing * smooth

    def __call__(self, y_true, y_pred):
        losses = self.call(y_true, y_pred)
        mask = torch.ones_like(losses, dtype=torch.bool)
        if self.ignore_class is not None:
            mask = y_true != self.ignore_class
        losses = losses * mask
        if self.reduction == "sum":
            return losses.sum()
        if self.reduction == "sum_over_batch_size":
            return losses.sum() / mask.sum()
        return losses


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    loss_fn = SparseCategoricalCrossentropy(from_logits=True, ignore_class=ignore_index, label_smoothing=label_smoothing)
    return loss_fn(targets, logits).to(logits.dtype)
# bug-line: 11
