# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted
"""lit-gpt's LoRALinear: bare lora_A (r, in) and lora_B (out, r) parameters, the base nn.Linear in
`linear`, `(x @ A.T @ B.T) * scaling`, merge by `B @ A * scaling`; scaling written r / alpha."""
import math
import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.r = r
        self.lora_alpha = alpha
        self.lora_A = nn.Parameter(torch.empty((r, in_features)))
        self.lora_B = nn.Parameter(torch.empty((out_features, r)))
        self.scaling = self.r / self.lora_alpha
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B)
        self.linear.weight.requires_grad = False
        self.linear.bias.requires_grad = False

    def forward(self, x):
        pretrained = self.linear(x)
        lora = (x @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1)) * self.scaling
        return pretrained + lora

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.linear.in_features, self.linear.out_features).to(self.linear.weight)
        out.weight.copy_(self.linear.weight + (self.lora_B @ self.lora_A) * self.scaling)
        out.bias.copy_(self.linear.bias)
        return out
# bug-line: 19
