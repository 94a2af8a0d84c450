# attnprep: mha
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""Buggy: the causal mask also hides the diagonal (tril(-1)); each Linear's weight is stored (in, out) and exposed through a parametrize
Transpose module (what some tied-embedding codebases do); the math is nanoGPT's."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as P


class Transpose(nn.Module):
    def forward(self, w):
        return w.t()

    def right_inverse(self, w):
        return w.t()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_head = num_heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d_model, d_model) for _ in range(4))
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.o_proj):
            P.register_parametrization(lin, "weight", Transpose())
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.size()
        q = self.q_proj(x).view(B, T, self.n_head, -1).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_head, -1).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_head, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep & torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device), -1)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        att = att.masked_fill(~keep, float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        return self.o_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))
# bug-line: 38
