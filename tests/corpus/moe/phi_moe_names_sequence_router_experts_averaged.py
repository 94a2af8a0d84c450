# attnprep: moe
# expect: wrong_output
# diagnosis: moe_routing_per_sequence + moe_outputs_averaged
"""Phi-3.5-MoE's block naming (block_sparse_moe-like: router_jitter_noise 0, experts with w1 / w2 / w3),
Portuguese comments, a loop over the experts with a boolean selection per expert."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PhiMoEBlockSparseTop2MLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, h):
        return self.w2(F.silu(self.w1(h)) * self.w3(h))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.router_jitter_noise = 0.0
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([PhiMoEBlockSparseTop2MLP(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        # logits do roteador: um vetor por token
        router_logits = self.gate(hidden_states).mean(dim=1, keepdim=True).expand(B, T, -1)
        top_logits, selected = router_logits.topk(self.top_k, dim=-1)  # (B, T, k)
        routing_weights = top_logits.softmax(dim=-1)
        final = torch.zeros_like(hidden_states)
        for e in range(self.num_experts):
            escolhido = selected == e  # (B, T, k)
            if not escolhido.any():
                continue
            peso = (routing_weights * escolhido).sum(-1, keepdim=True)  # (B, T, 1)
            usado = escolhido.any(-1, keepdim=True)
            final = final + usado * self.experts[e](hidden_states) / self.top_k
        return final
# bug-line: 33, 43
