# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: ignore_index_hardcoded
"""A torchmetrics-like stateful metric: update() accumulates the summed loss and the token count as
states, compute() divides; the function builds one, updates once and computes. Ignored targets are
recognised as the negative ones (the -100 convention)."""
import torch


class TokenCrossEntropy:
    def __init__(self, ignore_index=-100, label_smoothing=0.0):
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.sum_loss = None
        self.total = None

    def update(self, logits, targets):
        V = logits.shape[-1]
        logits = logits.reshape(-1, V).float()
        targets = targets.reshape(-1)
        keep = targets >= 0
        safe = targets.clamp(min=0)
        m = logits.max(dim=-1, keepdim=True).values
        logz = m.squeeze(-1) + (logits - m).exp().sum(-1).log()
        nll = logz - logits.gather(1, safe[:, None]).squeeze(1)
        uniform = logz - logits.mean(-1)
        loss = (1 - self.label_smoothing) * nll + self.label_smoothing * uniform
        loss = torch.where(keep, loss, torch.zeros_like(loss))
        self.sum_loss = loss.sum() if self.sum_loss is None else self.sum_loss + loss.sum()
        n = keep.sum()
        self.total = n if self.total is None else self.total + n

    def compute(self):
        return self.sum_loss / self.total


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    metric = TokenCrossEntropy(ignore_index, label_smoothing)
    metric.update(logits, targets)
    return metric.compute().to(logits.dtype)
# bug-line: 21
