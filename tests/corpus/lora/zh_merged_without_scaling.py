# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_no_scale
"""Chinese comments; forward is right, but merged() folds B·A into the weight without the alpha / r
scaling."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)  # 预训练层，冻结
        self.base.weight.requires_grad_(False)
        self.base.bias.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)  # 降维
        self.lora_B = nn.Linear(r, out_features, bias=False)  # 升维，初始化为 0
        nn.init.zeros_(self.lora_B.weight)
        self.scale = alpha / r  # 缩放系数

    def forward(self, x):
        return self.base(x) + self.scale * self.lora_B(self.lora_A(x))

    @torch.no_grad()
    def merged(self):
        W = self.base.weight.clone()
        W += self.lora_B.weight @ self.lora_A.weight  # 合并低秩更新
        layer = nn.Linear(W.shape[1], W.shape[0]).to(W)
        layer.weight.copy_(W)
        layer.bias.copy_(self.base.bias)
        return layer
# bug-line: 28
