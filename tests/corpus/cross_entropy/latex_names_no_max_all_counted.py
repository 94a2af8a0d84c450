# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + cross_entropy_mean_includes_ignored
"""Names copied from the paper's LaTeX: mathbf_z for the logits, log_Z for the partition function,
hat_p, mathcal_L, N_valid; log_Z was log(sum(exp(z))) without the max, and the mean divided by
every target, ignored ones included."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    mathbf_z = logits.reshape(-1, V)  # (N, V)
    y = targets.reshape(-1)  # (N,)
    log_Z = torch.log(torch.exp(mathbf_z).sum(dim=-1, keepdim=True))
    log_hat_p = mathbf_z - log_Z  # (N, V)
    is_valid = y != ignore_index
    y_safe = torch.where(is_valid, y, torch.zeros_like(y))
    ell = -log_hat_p.gather(-1, y_safe.unsqueeze(-1)).squeeze(-1)
    varepsilon = label_smoothing
    ell = (1 - varepsilon) * ell + varepsilon * (-log_hat_p.mean(dim=-1))
    ell = ell * is_valid
    N_valid = y.numel()
    mathcal_L = ell.sum() / N_valid
    return mathcal_L
# bug-line: 14, 22
