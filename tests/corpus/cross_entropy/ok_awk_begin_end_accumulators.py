# attnprep: cross_entropy
# expect: passed
"""An awk programmer's habits: a BEGIN block that sets accumulators, a main block run per "record"
(here a whole tensor of rows at once, NR = the row count), an END block that prints (returns) the
mean; field-like names ($0 the row, NF the number of classes)."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    # BEGIN
    total = logits.new_zeros(())
    count = 0
    # main: every record is a row of logits
    rows = logits.reshape(-1, logits.shape[-1]).float()  # $0 per row
    tgt = targets.reshape(-1)
    NF = rows.shape[-1]
    keep = tgt != ignore_index
    NR = int(keep.sum())
    row_max = rows.max(dim=-1, keepdim=True).values
    log_z = (rows - row_max).exp().sum(-1).log() + row_max.squeeze(-1)
    log_p = rows - log_z[:, None]
    safe = torch.where(keep, tgt, torch.zeros_like(tgt))
    nll = -log_p.gather(-1, safe[:, None]).squeeze(-1)
    smooth = -log_p.sum(-1) / NF
    per_row = (1.0 - label_smoothing) * nll + label_smoothing * smooth
    total = total + torch.where(keep, per_row, torch.zeros_like(per_row)).sum()
    count += NR
    # END { print total / count }
    return (total / count).to(logits.dtype)
