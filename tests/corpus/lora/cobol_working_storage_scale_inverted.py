# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted
"""A COBOL programmer's habits: UPPER-CASE data names with underscores for hyphens, a
WORKING-STORAGE section of the constructor that declares every value up front, PERFORM-like
paragraphs as methods (COMPUTE-SCALING, PERFORM-MERGE); COMPUTE SCALING = R / ALPHA."""
import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        # WORKING-STORAGE SECTION.
        self.IN_FEATURES = in_features
        self.OUT_FEATURES = out_features
        self.RANK = r
        self.ALPHA = alpha
        self.SCALING = 0.0
        # PROCEDURE DIVISION.
        self.base = nn.Linear(in_features, out_features)
        self.base.weight.requires_grad_(False)
        self.base.bias.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.COMPUTE_SCALING()

    def COMPUTE_SCALING(self):
        # COMPUTE SCALING = ALPHA / RANK.
        self.SCALING = self.RANK / self.ALPHA

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.SCALING

    def merged(self):
        # PERFORM-MERGE.
        MERGED = nn.Linear(self.IN_FEATURES, self.OUT_FEATURES)
        with torch.no_grad():
            DELTA = (self.lora_B.weight @ self.lora_A.weight) * self.SCALING
            MERGED.weight.copy_(self.base.weight + DELTA)
            MERGED.bias.copy_(self.base.bias)
        return MERGED
# bug-line: 31
