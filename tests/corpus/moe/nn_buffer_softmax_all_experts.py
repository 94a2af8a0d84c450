# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
# The mistake: the top-k weights are the softmax over all experts, gathered, never renormalised.
# torch.nn.Buffer (the 2.5+ API) for an expert index table; top-k through torch.sort(stable=True);
# experts run on their tokens with torch.nonzero.
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLUExpert(nn.Module):
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
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(SwiGLUExpert(d_model, d_ff) for _ in range(num_experts))
        self.top_k = top_k
        self.expert_ids = nn.Buffer(torch.arange(num_experts), persistent=False)

    def forward(self, x):
        shape = x.shape
        h = x.flatten(0, -2)
        logits = self.gate(h)
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True, stable=True)
        top_logits, top_ids = sorted_logits[:, : self.top_k], order[:, : self.top_k]
        probs = F.softmax(logits, dim=-1).gather(-1, top_ids)
        out = torch.zeros_like(h)
        for e in self.expert_ids.tolist():
            hit = top_ids == e  # (N, k)
            rows = torch.nonzero(hit.any(-1)).squeeze(-1)
            if rows.numel():
                wgt = (probs * hit).sum(-1)[rows, None]
                out[rows] += wgt * self.experts[e](h[rows])
        return out.view(shape), logits
# bug-line: 37
