# attnprep: moe
# expect: wrong_output
# diagnosis: moe_outputs_averaged
"""Skywork-MoE's naming (SkyworkMoeConfig, moe_gate, num_experts_per_tok, a combine mode in the
config) with the experts' outputs merged by a reducer that the config names; the config's default
combine mode was written "mean", which averages the chosen experts' outputs without the router
weights."""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class SkyworkMoeConfig:
    num_experts_per_tok: int = 2
    moe_combine: str = "mean"
    norm_topk_prob: bool = True


class SkyworkExpert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


COMBINE = {
    "weighted": lambda outs, w: (outs * w[..., None]).sum(dim=1),
    "mean": lambda outs, w: outs.mean(dim=1),
}


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.config = SkyworkMoeConfig(num_experts_per_tok=top_k)
        self.num_experts = num_experts
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(SkyworkExpert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        tokens = x.reshape(-1, C)
        router_logits = self.gate(tokens)
        top_logits, top_idx = router_logits.topk(self.config.num_experts_per_tok, dim=-1)
        weights = top_logits.softmax(dim=-1)
        all_outs = torch.stack([e(tokens) for e in self.experts], dim=1)  # (N, E, C)
        chosen = all_outs.gather(1, top_idx[..., None].expand(-1, -1, C))  # (N, k, C)
        out = COMBINE[self.config.moe_combine](chosen, weights)
        return out.reshape(B, T, C), router_logits
# bug-line: 18
