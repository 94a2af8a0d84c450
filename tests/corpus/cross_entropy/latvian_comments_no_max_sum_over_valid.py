# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + cross_entropy_sum_not_mean
"""Komentāri latviešu valodā (Latvian comments and names: merki, zaudejums, derigie, klases);
exp of the raw logits summed without the row max (overflows at 1e4), and the per-target losses
summed over the valid targets, never divided by their count."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    klases = logits.size(-1)
    z = logits.reshape(-1, klases).to(torch.float32)
    merki = targets.reshape(-1)
    derigie = merki.ne(ignore_index)  # derīgie mērķi
    log_summa = z.exp().sum(dim=1).log()  # logaritms no summas
    dross = merki.clamp(min=0)
    nll = log_summa - z.gather(1, dross[:, None]).squeeze(1)
    gludais = log_summa - z.mean(dim=1)  # vienmērīgais sadalījums
    zaudejums = (1.0 - label_smoothing) * nll + label_smoothing * gludais
    zaudejums = zaudejums.masked_fill(~derigie, 0.0)
    return zaudejums.sum()  # kopējais zaudējums
# bug-line: 15, 21
