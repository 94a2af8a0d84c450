# attnprep: moe
# expect: wrong_output
# diagnosis: moe_weights_not_applied
"""Maoni ya Kiswahili (Swahili comments and names: mtaalamu for an expert, uzito for a weight,
njia for a route), each expert reached by self.get_submodule(f"wataalamu.{e}"); each expert's output
added back without its routing weight."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Mtaalamu(nn.Module):  # mtaalamu mmoja: SwiGLU
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # lango
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # chini
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # juu

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.idadi = num_experts  # idadi ya wataalamu
        self.k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)  # kipanga njia
        self.wataalamu = nn.ModuleList([Mtaalamu(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        alama = self.gate(x)  # (B, T, E)
        bora, njia = alama.topk(self.k, dim=-1)  # wataalamu k bora kwa kila tokeni
        uzito = bora.softmax(dim=-1)  # (B, T, k)
        tokeni = x.reshape(-1, C)
        njia = njia.reshape(-1, self.k)
        uzito = uzito.reshape(-1, self.k)
        matokeo = torch.zeros_like(tokeni)
        for e in range(self.idadi):
            mtaalamu = self.get_submodule(f"wataalamu.{e}")
            safu, nafasi = (njia == e).nonzero(as_tuple=True)  # tokeni zilizotumwa kwa e
            if safu.numel() == 0:
                continue
            matokeo.index_add_(0, safu, mtaalamu(tokeni[safu]))
        return matokeo.view(B, T, C), alama
# bug-line: 45
