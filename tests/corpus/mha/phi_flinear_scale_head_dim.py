# attnprep: mha
# expect: wrong_output
# diagnosis: scale_by_dim
"""Phi-style attention calling F.linear on the layers' bare weights, with the softmax scale set in
__init__ as 1 / head_dim instead of 1 / sqrt(head_dim)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.n_head = num_heads
        self.d_head = d_model // num_heads
        self.softmax_scale = 1.0 / self.d_head
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def _shape(self, t: torch.Tensor, B: int, T: int) -> torch.Tensor:
        return t.view(B, T, self.n_head, self.d_head).permute(0, 2, 1, 3)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self._shape(F.linear(x, self.q_proj.weight, self.q_proj.bias), B, T)
        k = self._shape(F.linear(x, self.k_proj.weight, self.k_proj.bias), B, T)
        v = self._shape(F.linear(x, self.v_proj.weight, self.v_proj.bias), B, T)
        scores = torch.einsum("bhtd,bhsd->bhts", q, k) * self.softmax_scale
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask.bool()[:, None, None, :], float("-inf"))
        if is_causal:
            causal = torch.ones(T, T, device=x.device, dtype=torch.bool).tril()
            scores = scores.masked_fill(~causal, float("-inf"))
        probs = self.drop(scores.softmax(-1))
        out = torch.einsum("bhts,bhsd->bhtd", probs, v)
        out = out.permute(0, 2, 1, 3).reshape(B, T, C)
        return F.linear(out, self.o_proj.weight, self.o_proj.bias)
# bug-line: 17
