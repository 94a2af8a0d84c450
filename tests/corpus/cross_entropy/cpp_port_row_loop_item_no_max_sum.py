# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + cross_entropy_sum_not_mean
"""A C++ port: explicit loops over the rows with `.item()` for the target and the counters, the
loss accumulated in a Python float-like tensor, label smoothing written as in the CUDA kernel."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    flat_logits = logits.reshape(-1, V).float()
    flat_targets = targets.reshape(-1)
    total = torch.zeros((), dtype=torch.float32, device=logits.device)
    count = 0
    for n in range(flat_logits.shape[0]):
        t = int(flat_targets[n].item())
        if t == ignore_index:
            continue
        row = flat_logits[n]
        lse = torch.log(torch.exp(row).sum())
        nll = lse - row[t]
        smooth = lse - row.mean()          # mean over classes of -log p
        total = total + (1.0 - label_smoothing) * nll + label_smoothing * smooth
        count += 1
    return total.to(logits.dtype)
# bug-line: 20, 25
