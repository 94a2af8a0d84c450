# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_before_top_k
"""Comentaris en català (Catalan comments and names: filtres, probabilitats, ordenats, acumulat);
the warpers kept in a list applied in order, and that list puts the nucleus filter before top-k."""
import torch


def filtre_top_k(logits, top_k):
    if top_k <= 0:
        return logits
    llindar = torch.topk(logits, top_k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < llindar, float("-inf"))


def filtre_top_p(logits, top_p):
    if top_p >= 1.0:
        return logits
    ordenats, index = torch.sort(logits, dim=-1, descending=True)
    acumulat = torch.softmax(ordenats, dim=-1).cumsum(dim=-1)
    fora = acumulat - torch.softmax(ordenats, dim=-1) >= top_p  # el que creua es queda
    fora_original = torch.zeros_like(fora).scatter(-1, index, fora)
    return logits.masked_fill(fora_original, float("-inf"))


FILTRES = [("top_p", filtre_top_p), ("top_k", filtre_top_k)]  # ordre dels filtres


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    parametres = {"top_k": top_k, "top_p": top_p}
    x = logits / temperature
    for nom, filtre in FILTRES:
        x = filtre(x, parametres[nom])
    return torch.softmax(x, dim=-1)
# bug-line: 26
