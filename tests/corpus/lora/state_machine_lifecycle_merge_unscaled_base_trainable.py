# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_no_scale + lora_base_not_frozen
"""A lifecycle state machine: a TRANSITIONS table (created -> ready -> merged) and enter_<state>
hooks that do each stage's work; entering "ready" was meant to freeze the base but froze the
adapter's A instead, and the merge added B·A without the alpha / r factor."""
import torch
import torch.nn as nn

TRANSITIONS = {"created": ("ready",), "ready": ("merged",), "merged": ()}


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.state = "created"
        self.scaling = alpha / r
        self.base = nn.Linear(in_features, out_features)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        self.go("ready")

    def go(self, new_state):
        if new_state not in TRANSITIONS[self.state]:
            raise RuntimeError(f"cannot go from {self.state} to {new_state}")
        getattr(self, "enter_" + new_state)()
        self.state = new_state

    def enter_ready(self):
        nn.init.zeros_(self.lora_B.weight)
        self.lora_A.requires_grad_(True)

    def enter_merged(self):
        pass

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features)
        out = out.to(device=self.base.weight.device, dtype=self.base.weight.dtype)
        out.weight.copy_(self.base.weight + self.lora_B.weight @ self.lora_A.weight)
        out.bias.copy_(self.base.bias)
        return out
# bug-line: 31, 43
