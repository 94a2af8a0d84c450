# attnprep: moe
# expect: wrong_output
# diagnosis: moe_top1
"""A table of lambdas for the router stages (`ROUTER = {"logits": ..., "pick": ..., "weigh": ...}`)
and a small `dispatch` helper, the experts as HF-named SwiGLU MLPs. The "pick" lambda was written
for a top-1 Switch router and keeps `k=1` whatever top_k says; "weigh" is a softmax over what was
picked, so each token gets its best expert with weight 1."""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROUTER = {
    "logits": lambda gate, x: gate(x),
    "pick": lambda logits, top_k: torch.topk(logits, k=1, dim=-1),
    "weigh": lambda chosen_logits: torch.softmax(chosen_logits, dim=-1),
}


class ExpertMLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def dispatch(experts, flat, idx, weights):
    out = torch.zeros_like(flat)
    for e, expert in enumerate(experts):
        tok, slot = (idx == e).nonzero(as_tuple=True)
        if len(tok):
            out.index_add_(0, tok, weights[tok, slot].unsqueeze(-1) * expert(flat[tok]))
    return out


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([ExpertMLP(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(B * T, C)
        logits = ROUTER["logits"](self.gate, flat)
        chosen, idx = ROUTER["pick"](logits, self.top_k)
        weights = ROUTER["weigh"](chosen)
        return dispatch(self.experts, flat, idx, weights).view(B, T, C)
# bug-line: 15
