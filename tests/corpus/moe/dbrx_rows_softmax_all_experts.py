# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
# The mistake: the top-k weights are left as the softmax over all experts gave them (no renormalisation).
# DBRX's DbrxExpertGLU: all experts' w1 / v1 / w2 stacked along the rows of one 2-d parameter
# (num_experts·d_ff, d_model), each expert's slice read with view(E, F, D)[e]; w2 used as x @ w2[e]
# (its (d_ff, d_model) slice, transposed use). Router: softmax over all, top-k, weights L1-normalised.
import torch
import torch.nn as nn
import torch.nn.functional as F


class DbrxExpertGLU(nn.Module):
    def __init__(self, hidden_size, ffn_hidden_size, moe_num_experts):
        super().__init__()
        self.hidden_size = hidden_size
        self.ffn_hidden_size = ffn_hidden_size
        self.moe_num_experts = moe_num_experts
        self.w1 = nn.Parameter(torch.empty(moe_num_experts * ffn_hidden_size, hidden_size))
        self.v1 = nn.Parameter(torch.empty(moe_num_experts * ffn_hidden_size, hidden_size))
        self.w2 = nn.Parameter(torch.empty(moe_num_experts * ffn_hidden_size, hidden_size))
        for p in (self.w1, self.v1, self.w2):
            nn.init.normal_(p, std=0.02)

    def forward(self, x, expert_idx):
        E, Fh, D = self.moe_num_experts, self.ffn_hidden_size, self.hidden_size
        w1 = self.w1.view(E, Fh, D)[expert_idx]
        v1 = self.v1.view(E, Fh, D)[expert_idx]
        w2 = self.w2.view(E, Fh, D)[expert_idx]
        gate = x.matmul(w1.t())
        up = x.matmul(v1.t())
        return (F.silu(gate) * up).matmul(w2)


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.num_experts = num_experts
        self.router = nn.Linear(d_model, num_experts, bias=False)
        self.mlp = DbrxExpertGLU(d_model, d_ff, num_experts)

    def forward(self, x):
        B, T, D = x.shape
        h = x.reshape(-1, D)
        weights = self.router(h).softmax(dim=-1, dtype=torch.float32)
        top_weights, top_experts = torch.topk(weights, self.top_k, dim=-1)
        pass  # weights kept as the softmax over all experts gave them
        top_weights = top_weights.to(x.dtype)
        out = torch.zeros_like(h)
        expert_mask = F.one_hot(top_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for e in range(self.num_experts):
            topk_idx, token_idx = torch.where(expert_mask[e])
            if token_idx.numel() == 0:
                continue
            y = self.mlp(h[token_idx], e) * top_weights[token_idx, topk_idx, None]
            out.index_add_(0, token_idx, y)
        return out.view(B, T, D)
# bug-line: 48
