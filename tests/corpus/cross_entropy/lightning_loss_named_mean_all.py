# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_mean_includes_ignored
"""A PyTorch-Lightning training_step's loss, pulled out as a function: `loss` names the negative
log-likelihood from the start and is refined in place (smoothing, then the ignored targets zeroed);
the log-softmax is written out with the row max. The zeroed rows are then averaged with the rest:
`.mean()` divides by every target, the ignored ones too."""

import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    flat = logits.flatten(0, -2)
    tgt = targets.flatten()
    shifted = flat - flat.max(-1, keepdim=True).values
    log_probs = shifted - shifted.exp().sum(-1, keepdim=True).log()
    counts = tgt.ne(ignore_index)
    loss = -log_probs.gather(-1, tgt.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    if label_smoothing:
        loss = (1 - label_smoothing) * loss - label_smoothing * log_probs.mean(-1)
    loss = loss * counts
    return loss.mean()
# bug-line: 22
