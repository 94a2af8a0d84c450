# attnprep: moe
# expect: passed
"""Correct: MLX's SwitchGLU idea in torch: the experts' weights stacked per call, gathered per (token, slot), one batched matmul."""
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
        gates = self.gate(x)  # (B, T, E)
        k = self.top_k
        inds = torch.argsort(gates, dim=-1, descending=True)[..., :k]  # mx.argpartition(-gates, k - 1)[..., :k]
        scores = torch.take_along_dim(gates, inds, dim=-1).softmax(dim=-1)  # (B, T, k)
        W1 = torch.stack([e.w1.weight for e in self.experts])  # (E, F, C)
        W3 = torch.stack([e.w3.weight for e in self.experts])  # (E, F, C)
        W2 = torch.stack([e.w2.weight for e in self.experts])  # (E, C, F)
        xs = x.reshape(B * T, 1, C).expand(-1, k, -1).reshape(-1, C)  # (N*k, C)
        idx = inds.reshape(-1)  # (N*k,)
        g = torch.bmm(W1[idx], xs[:, :, None]).squeeze(-1)  # (N*k, F)
        u = torch.bmm(W3[idx], xs[:, :, None]).squeeze(-1)
        y = torch.bmm(W2[idx], (F.silu(g) * u)[:, :, None]).squeeze(-1)  # (N*k, C)
        y = (y.view(B, T, k, C) * scores[..., None]).sum(dim=2)
        return y, gates
