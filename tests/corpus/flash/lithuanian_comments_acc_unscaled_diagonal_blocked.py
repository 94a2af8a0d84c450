# attnprep: flash
# expect: wrong_output
# diagnosis: flash_acc_not_rescaled + flash_causal_off_by_one
"""Komentarai lietuviškai (Lithuanian comments and names: blokas, maksimumas, suma, kaupiklis,
uzklausos, raktai); per query block and key block, the causal test written `raktas >= uzklausa`
(blocking the diagonal too), and the accumulator added to without the exp(m_old - m_new) factor."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    skale = D ** -0.5
    rezultatai = []
    for qs in range(0, L, block_size):
        uzklausos = q[..., qs:qs + block_size, :]  # užklausų blokas
        n = uzklausos.shape[-2]
        maksimumas = torch.full((B, H, n), float("-inf"), device=q.device, dtype=q.dtype)
        suma = torch.zeros(B, H, n, device=q.device, dtype=q.dtype)
        kaupiklis = torch.zeros(B, H, n, D, device=q.device, dtype=q.dtype)
        for ks in range(0, S, block_size):
            raktai = k[..., ks:ks + block_size, :]
            reiksmes = v[..., ks:ks + block_size, :]
            balai = torch.einsum("bhid,bhjd->bhij", uzklausos, raktai) * skale
            if is_causal:
                uzklausa = torch.arange(qs, qs + n, device=q.device)[:, None]
                raktas = torch.arange(ks, ks + raktai.shape[-2], device=q.device)[None, :]
                balai = balai.masked_fill(raktas >= uzklausa, float("-inf"))  # ateitis
            naujas = torch.maximum(maksimumas, balai.amax(dim=-1))
            naujas_saugus = torch.where(torch.isinf(naujas), torch.zeros_like(naujas), naujas)
            p = torch.exp(balai - naujas_saugus[..., None])
            korekcija = torch.exp(maksimumas - naujas_saugus)
            suma = suma * korekcija + p.sum(dim=-1)
            kaupiklis = kaupiklis + torch.einsum("bhij,bhjd->bhid", p, reiksmes)  # kaupiklis
            maksimumas = naujas
        rezultatai.append(kaupiklis / suma[..., None])
    return torch.cat(rezultatai, dim=-2)
# bug-line: 30, 36
