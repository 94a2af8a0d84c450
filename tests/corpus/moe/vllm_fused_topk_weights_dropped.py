# attnprep: moe
# expect: wrong_output
# diagnosis: moe_weights_not_applied
"""vLLM's fused_moe reference (torch_moe) by hand: fused_topk returns (topk_weights, topk_ids),
w1 stacks gate and up as one (E, 2*d_ff, d_model) tensor view, SiluAndMul splits it; the weights
are computed and renormalised, then the expert outputs are summed without them."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def fused_topk(gating_output, topk, renormalize=True):
    scores = torch.softmax(gating_output.float(), dim=-1)
    topk_weights, topk_ids = torch.topk(scores, topk, dim=-1)
    if renormalize:
        topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
    return topk_weights, topk_ids


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.topk = top_k
        self.router = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, hidden_states):
        B, T, H = hidden_states.shape
        a = hidden_states.view(-1, H)
        topk_weights, topk_ids = fused_topk(self.router(a), self.topk)
        w1 = torch.stack([torch.cat([e.gate_proj.weight, e.up_proj.weight], 0) for e in self.experts])
        w2 = torch.stack([e.down_proj.weight for e in self.experts])
        out = torch.zeros(a.shape[0], self.topk, H, dtype=a.dtype, device=a.device)
        a_rep = a.view(-1, 1, H).repeat(1, self.topk, 1).reshape(-1, H)
        ids = topk_ids.view(-1)
        out = out.view(-1, H)
        for i in range(w1.shape[0]):
            mask = ids == i
            if mask.any():
                gate_up = a_rep[mask] @ w1[i].transpose(0, 1)
                g, u = gate_up.chunk(2, dim=-1)
                out[mask] = (F.silu(g) * u) @ w2[i].transpose(0, 1)
        out = out.view(-1, self.topk, H).sum(dim=1)
        return out.view(B, T, H)
# bug-line: 52
