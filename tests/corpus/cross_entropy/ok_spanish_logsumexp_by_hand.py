# attnprep: cross_entropy
# expect: passed
"""Spanish comments; log-sum-exp written by hand with the row max, the smoothing as torch defines it
(uniform over all V classes), the mean over the tokens kept."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    z = logits.reshape(-1, V).float()
    t = targets.reshape(-1)
    validos = t != ignore_index  # los tokens ignorados no cuentan
    maximo = z.amax(dim=-1, keepdim=True)
    lse = maximo.squeeze(-1) + torch.log(torch.exp(z - maximo).sum(dim=-1))  # log-sum-exp estable
    objetivo = z.gather(1, t.clamp(min=0)[:, None]).squeeze(1)
    nll = lse - objetivo
    uniforme = lse - z.mean(dim=-1)  # -media de log p sobre las V clases
    perdida = (1.0 - label_smoothing) * nll + label_smoothing * uniforme
    perdida = torch.where(validos, perdida, torch.zeros_like(perdida))
    return (perdida.sum() / validos.sum()).to(logits.dtype)
