# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
"""Grok-1's MoE as its JAX code reads, ported: a Router whose routing_probs are the softmax of all
the router logits, jax.lax.top_k on them, the expert outputs combined with the kept probabilities;
the experts' weights gathered into stacked (E, ...) views for an einsum dispatch per selected slot."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.num_selected_experts = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def _compute_routing_prob(self, inputs):
        routing_logits = self.gate(inputs)
        routing_probs = F.softmax(routing_logits.float(), dim=-1)
        return routing_probs, routing_logits

    def forward(self, inputs):
        B, T, D = inputs.shape
        x = inputs.reshape(B * T, D)
        routing_probs, routing_logits = self._compute_routing_prob(x)
        expert_gate, expert_index = torch.topk(routing_probs, self.num_selected_experts)
        w1 = torch.stack([e.w1.weight for e in self.experts])  # (E, F, D)
        w3 = torch.stack([e.w3.weight for e in self.experts])
        w2 = torch.stack([e.w2.weight for e in self.experts])  # (E, D, F)
        out = torch.zeros_like(x)
        for slot in range(self.num_selected_experts):
            e = expert_index[:, slot]
            h = F.silu(torch.einsum("nd,nfd->nf", x, w1[e])) * torch.einsum("nd,nfd->nf", x, w3[e])
            y = torch.einsum("nf,ndf->nd", h, w2[e])
            out = out + expert_gate[:, slot, None].to(x.dtype) * y
        return out.reshape(B, T, D)
# bug-line: 36
