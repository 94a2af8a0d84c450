# attnprep: lora
# expect: passed
"""面试手撕版 LoRA：中文注释，einsum 写低秩更新，forward 里用 torch.no_grad 之外的 detach 冻结，
merged() 用 state_dict 拷贝。"""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, r: int, alpha: float):
        super().__init__()
        self.r, self.alpha = r, alpha
        # 预训练的线性层，冻结
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        # 低秩分解：A 降维，B 升维；B 初始化为 0，保证一开始输出等于 base
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.normal_(self.lora_A.weight, std=1 / r)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        # x: (..., in)  ->  h: (..., r)  ->  (..., out)
        h = torch.einsum("...i,ri->...r", x, self.lora_A.weight)
        delta = torch.einsum("...r,or->...o", h, self.lora_B.weight)
        return self.base(x) + delta * (self.alpha / self.r)  # 缩放系数 alpha / r

    def merged(self):
        # 合并：W' = W + (alpha / r) * B @ A，偏置不变
        layer = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight.dtype)
        state = {
            "weight": self.base.weight.detach() + (self.alpha / self.r) * (self.lora_B.weight @ self.lora_A.weight).detach(),
            "bias": self.base.bias.detach().clone(),
        }
        layer.load_state_dict(state)
        return layer
