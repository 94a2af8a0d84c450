# attnprep: moe
# expect: passed
# GShard-style dense dispatch with a capacity large enough for every token (no drop): one-hot dispatch
# and combine tensors (tokens, experts, capacity) built with cumsum positions, einsum in and out.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.w1 = nn.Linear(d, f, bias=False)
        self.w2 = nn.Linear(f, d, bias=False)
        self.w3 = nn.Linear(d, f, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])
        self.k = top_k

    def forward(self, x):
        B, T, D = x.shape
        tok = x.reshape(-1, D)
        N, E = tok.shape[0], len(self.experts)
        logits = self.gate(tok)
        val, idx = logits.topk(self.k, dim=-1)
        w = val.softmax(-1)  # (N, k)
        cap = N * self.k
        onehot = F.one_hot(idx.reshape(-1), E).to(tok.dtype)  # (N·k, E), token-major
        pos = (onehot.cumsum(0) - 1) * onehot  # slot of each assignment in its expert
        slot = F.one_hot(pos.sum(-1).long(), cap).to(tok.dtype)  # (N·k, cap)
        dispatch = (onehot[:, :, None] * slot[:, None, :]).view(N, self.k, E, cap)
        combine = (dispatch * w[:, :, None, None]).sum(1)  # (N, E, cap)
        dispatch = dispatch.sum(1)
        expert_in = torch.einsum("nec,nd->ecd", dispatch, tok)
        expert_out = torch.stack([self.experts[e](expert_in[e]) for e in range(E)])  # (E, cap, D)
        return torch.einsum("nec,ecd->nd", combine, expert_out).view(B, T, D)
