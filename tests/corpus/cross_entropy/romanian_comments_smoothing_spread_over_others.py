# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1
"""Comentarii în română (Romanian comments and names: tinte, pierdere, netezire, clase,
log_probabilitati); a stable log-softmax by hand; the smoothed target distribution built as
1 - eps on the target and eps / (V - 1) on every other class."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    logits = logits.reshape(-1, V).float()
    tinte = targets.reshape(-1)
    valide = tinte != ignore_index  # tinte care conteaza
    maxim = logits.max(dim=-1, keepdim=True).values
    log_probabilitati = logits - maxim - (logits - maxim).exp().sum(-1, keepdim=True).log()
    sigure = torch.where(valide, tinte, torch.zeros_like(tinte))
    # distributia tinta netezita
    distributie = torch.full_like(log_probabilitati, label_smoothing / (V - 1))
    distributie.scatter_(1, sigure[:, None], 1.0 - label_smoothing)
    pierdere = -(distributie * log_probabilitati).sum(-1)
    pierdere = torch.where(valide, pierdere, torch.zeros_like(pierdere))
    return pierdere.sum() / valide.sum()
# bug-line: 19, 20
