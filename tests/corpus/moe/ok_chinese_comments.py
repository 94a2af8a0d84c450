# attnprep: moe
# expect: passed
"""面经风格：中文注释，mask 矩阵写法（one-hot 权重矩阵 (N, E)，每个专家只算被选中的 token），
类型标注。"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # 门控
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # 上投影
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # 下投影

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model: int, d_ff: int, num_experts: int, top_k: int) -> None:
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)  # 路由器
        self.experts = nn.ModuleList([SwiGLU(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, C = x.shape
        h = x.reshape(-1, C)                                   # (N, C)
        logits = self.gate(h)                                  # (N, E) 路由 logits
        topv, topi = logits.topk(self.top_k, dim=-1)           # (N, k) 每个 token 选 top_k 个专家
        gates = torch.zeros_like(logits).scatter(-1, topi, F.softmax(topv, dim=-1))  # (N, E) 没选中的是 0
        out = torch.zeros_like(h)
        for e in range(self.num_experts):
            rows = gates[:, e].nonzero(as_tuple=True)[0]       # 路由到专家 e 的 token
            if rows.numel():
                out[rows] += gates[rows, e].unsqueeze(-1) * self.experts[e](h[rows])
        return out.view(B, T, C), logits.view(B, T, -1)        # 返回 (out, router_logits)
