# attnprep: moe
# expect: wrong_output
# diagnosis: moe_routing_per_sequence + moe_softmax_all_experts
"""Router logits averaged over the sequence (one routing per sample), and the weights a softmax over all
experts gathered at the top-k, never renormalised. Dense einsum over the experts' weights."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        router_logits = self.gate(x)
        seq_logits = router_logits.mean(dim=1, keepdim=True).expand(B, T, -1)
        probs = seq_logits.softmax(-1)
        w, idx = probs.topk(self.top_k, dim=-1)
        all_out = torch.stack([e(x) for e in self.experts], dim=2)  # (B, T, E, C)
        picked = torch.gather(all_out, 2, idx[..., None].expand(B, T, self.top_k, C))
        return torch.einsum("btk,btkc->btc", w, picked), router_logits
