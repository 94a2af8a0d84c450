# attnprep: moe
# expect: wrong_output
# diagnosis: moe_routing_per_sequence + moe_softmax_all_experts
"""Routing as a sparse matrix: a (tokens x experts) torch.sparse_coo_tensor of gate weights built
from the top-k indices; each expert reads its column's nonzeros (indices()), runs on those tokens, and
the results are summed back with index_add_. One routing decision per sequence (a "document router")."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLUExpert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([SwiGLUExpert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        router_logits = self.gate(x).mean(dim=1, keepdim=True).expand(B, T, self.num_experts)
        router_logits = router_logits.reshape(B * T, self.num_experts)
        probs = router_logits.softmax(dim=-1)
        top_w, top_e = probs.topk(self.top_k, dim=-1)
        rows = torch.arange(B * T, device=x.device).repeat_interleave(self.top_k)
        routing = torch.sparse_coo_tensor(torch.stack([rows, top_e.reshape(-1)]), top_w.reshape(-1),
                                          (B * T, self.num_experts)).coalesce()
        flat = x.reshape(B * T, C)
        out = torch.zeros_like(flat)
        idx, w = routing.indices(), routing.values()
        for e in range(self.num_experts):
            sel = idx[1] == e
            if sel.any():
                tok = idx[0][sel]
                out.index_add_(0, tok, self.experts[e](flat[tok]) * w[sel, None])
        return out.reshape(B, T, C), router_logits
# bug-line: 32, 34, 35
