# attnprep: moe
# expect: wrong_output
# diagnosis: moe_routing_per_sequence + moe_softmax_all_experts
"""Hunyuan-Large's MoE naming (HunYuanMoE: moe_topk, a shared_mlp switched off, a HunYuanTopKGate
holding wg), the gate a child module as in its code; the router logits averaged over the sequence
before the top-k (one routing per sequence), and the top-k weights taken from a softmax over all
experts and never renormalised."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class HunYuanMLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k, use_mixed_mlp_moe=False):
        super().__init__()
        self.moe_topk = top_k
        self.num_experts = num_experts
        self.use_mixed_mlp_moe = use_mixed_mlp_moe  # the shared MLP is off
        self.gate = nn.Linear(d_model, num_experts, bias=False)  # HunYuanTopKGate.wg
        self.experts = nn.ModuleList([HunYuanMLP(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        logits = self.gate(hidden_states)  # (B, T, E)
        logits = logits.mean(dim=1, keepdim=True).expand(B, T, self.num_experts)  # one route per sample
        gates = F.softmax(logits, dim=-1)
        weights, indices = gates.topk(self.moe_topk, dim=-1)
        weights = weights.to(hidden_states.dtype)
        flat = hidden_states.reshape(-1, C)
        out = torch.zeros_like(flat)
        w = weights.reshape(-1, self.moe_topk)
        ix = indices.reshape(-1, self.moe_topk)
        for e, expert in enumerate(self.experts):
            token, slot = (ix == e).nonzero(as_tuple=True)
            if token.numel():
                out.index_add_(0, token, expert(flat[token]) * w[token, slot, None])
        return out.view(B, T, C)
# bug-line: 36, 37
