# attnprep: cross_entropy
# expect: used_builtin
# diagnosis: used_builtin
"""F.log_softmax does the part of the exercise that matters."""
import torch.nn.functional as F


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    logp = F.log_softmax(logits.reshape(-1, logits.size(-1)), dim=-1)
    return F.nll_loss(logp, targets.reshape(-1), ignore_index=ignore_index) if label_smoothing == 0 else \
        F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=ignore_index,
                        label_smoothing=label_smoothing)
