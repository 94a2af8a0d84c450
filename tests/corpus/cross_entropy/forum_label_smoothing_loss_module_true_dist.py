# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1
"""The LabelSmoothingLoss module passed around on the PyTorch forums: confidence / smoothing kept on
the module, a true_dist built under torch.no_grad() with fill_(smoothing / (classes - 1)) and
scatter_ of the confidence, the loss as sum(-true_dist * pred); ignored rows dropped by index."""
import torch
import torch.nn as nn


class LabelSmoothingLoss(nn.Module):
    def __init__(self, classes, smoothing=0.0, dim=-1):
        super().__init__()
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.cls = classes
        self.dim = dim

    def forward(self, pred, target):
        pred = pred - pred.max(dim=self.dim, keepdim=True).values
        pred = pred - pred.exp().sum(dim=self.dim, keepdim=True).log()
        with torch.no_grad():
            true_dist = torch.zeros_like(pred)
            true_dist.fill_(self.smoothing / (self.cls - 1))
            true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        return torch.sum(-true_dist * pred, dim=self.dim)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    pred, target = logits.view(-1, V), targets.view(-1)
    keep = (target != ignore_index).nonzero().squeeze(-1)
    per_row = LabelSmoothingLoss(V, smoothing=label_smoothing)(pred[keep], target[keep])
    return per_row.sum() / keep.numel()
# bug-line: 14, 24
