# attnprep: cross_entropy
# expect: used_builtin
# diagnosis: used_builtin
"""nn.CrossEntropyLoss, the module form of the answer."""
import torch.nn as nn


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    loss_fct = nn.CrossEntropyLoss(ignore_index=ignore_index, label_smoothing=label_smoothing)
    return loss_fct(logits.view(-1, logits.size(-1)), targets.view(-1))
