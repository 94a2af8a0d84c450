"""SwiGLU, the feed-forward block of Llama, Mistral, Qwen and DeepSeek (Shazeer, 2020).

Two projections of the token to the hidden width: a gate, passed through SiLU (x · sigmoid(x)),
and an up projection, kept linear; their elementwise product is projected back down. Meta's Llama
names the three layers w1 (gate), w3 (up) and w2 (down); Hugging Face calls them gate_proj,
up_proj and down_proj. No biases. Each token is transformed on its own: x may have any number of
leading dims.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    """out = w2(silu(w1(x)) * w3(x)): a gated linear unit with a SiLU (Swish) gate."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # gate
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # up
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (..., d_model)
        gate = self.w1(x)  # (..., d_ff)
        up = self.w3(x)  # (..., d_ff)
        h = F.silu(gate) * up  # (..., d_ff): silu(g) = g * sigmoid(g), gating the linear branch
        return self.w2(h)  # (..., d_model)
