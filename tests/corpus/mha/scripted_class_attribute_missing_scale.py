# attnprep: mha
# expect: wrong_output
# diagnosis: missing_scale
"""Buggy: no 1/sqrt(head_dim) scale; the masked softmax is a TorchScript function set as a class attribute (`attend =
torch.jit.script(_attend)`, no staticmethod: a ScriptFunction does not bind self), called self.attend(...)."""
import math
import torch
import torch.nn as nn


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    s = torch.matmul(q, k.transpose(-2, -1))
    s = s.masked_fill(~keep, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)


class MultiHeadAttention(nn.Module):
    attend = torch.jit.script(_attend)

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        heads = lambda t: t.view(B, T, self.h, C // self.h).transpose(1, 2)  # noqa: E731
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        o = self.attend(heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x)), keep)
        return self.o_proj(o.transpose(1, 2).reshape(B, T, C))
# bug-line: 12
