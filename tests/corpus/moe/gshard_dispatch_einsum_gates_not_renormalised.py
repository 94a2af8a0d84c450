# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
"""GShard / DeepSpeed-MoE's dispatch in einsum form: the gate returns combine_weights (s, e) and a
dispatch_mask, tokens are gathered per expert with "se,sm->em"-like products (no capacity drop:
capacity = every token), the experts run on their rows, "se,esm->sm" combines."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ExpertFFN(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def topk_gating(logits, k):
    """combine_weights (s, e): the gate value of each chosen expert, 0 elsewhere; dispatch_mask (s, e) bool."""
    gates = F.softmax(logits, dim=1)                       # (s, e)
    topk_idx = torch.topk(logits, k, dim=1).indices        # (s, k)
    dispatch_mask = torch.zeros_like(gates, dtype=torch.bool).scatter(1, topk_idx, True)
    combine_weights = gates * dispatch_mask                # (s, e)
    return combine_weights, dispatch_mask


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.num_experts, self.k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(ExpertFFN(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, M = x.shape
        tokens = x.reshape(B * T, M)                                       # (s, m)
        combine_weights, dispatch_mask = topk_gating(self.gate(tokens), self.k)
        dispatched = torch.einsum("se,sm->esm", dispatch_mask.to(x.dtype), tokens)  # (e, s, m)
        expert_out = torch.stack([self.experts[e](dispatched[e]) for e in range(self.num_experts)])  # (e, s, m)
        out = torch.einsum("se,esm->sm", combine_weights, expert_out)      # (s, m)
        return out.reshape(B, T, M)
# bug-line: 28
