# attnprep: moe
# expect: wrong_output
# diagnosis: moe_weights_not_applied
"""Tensor-method style: everything chained on the tensors (.softmax(-1), .topk, .nonzero, .index_add_),
tokens flattened, dispatched per expert with index_select and gathered back with index_add_."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
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
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(-1, C)                                        # (N, C)
        logits = self.gate(flat)                                       # (N, E)
        top_logits, top_idx = logits.topk(self.top_k, dim=-1)          # (N, k)
        weights = top_logits.softmax(-1).to(x.dtype)                   # (N, k)
        out = flat.new_zeros(flat.shape)
        for e, expert in enumerate(self.experts):
            tok, slot = (top_idx == e).nonzero(as_tuple=True)
            if tok.numel() == 0:
                continue
            y = expert(flat.index_select(0, tok))                      # (n_e, C)
            out.index_add_(0, tok, y)
        return out.view(B, T, C), logits
# bug-line: 41
