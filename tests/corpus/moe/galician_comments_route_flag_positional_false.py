# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
"""Comentarios en galego (Galician comments and names: expertos, enrutador, pesos, escollidos); the
routing in a helper that takes the softmax over every expert and renormalises the chosen weights
only when its flag says so, and the forward passes that flag positionally as False."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Experto(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def enrutar(logits, k, renormalizar):
    # probabilidades sobre todos os expertos, despois os k mellores
    probas = logits.softmax(dim=-1)
    pesos, escollidos = probas.topk(k, dim=-1)
    if renormalizar:
        pesos = pesos / pesos.sum(dim=-1, keepdim=True)
    return pesos, escollidos


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Experto(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        planos = x.reshape(-1, C)
        pesos, escollidos = enrutar(self.gate(planos), self.top_k, False)  # enrutador
        saida = torch.zeros_like(planos)
        for e, experto in enumerate(self.experts):
            fila, posto = torch.where(escollidos == e)
            if fila.numel() > 0:
                saida.index_add_(0, fila, experto(planos[fila]) * pesos[fila, posto, None])
        return saida.reshape(B, T, C)
# bug-line: 42
