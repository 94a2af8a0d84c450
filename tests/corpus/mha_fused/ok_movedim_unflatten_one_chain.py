# attnprep: mha_fused
# expect: passed
"""One expression chain per step: the fused output unflattened to (B, T, 3, H, D) and its parts
moved to the front with movedim, scores by torch.einsum with upper-case letters, masks combined
into one additive bias with torch.where, heads merged by movedim + flatten."""
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.p = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = self.qkv_proj(x).unflatten(-1, (3, self.h, C // self.h)).movedim(2, 0).movedim(2, 3)
        allow = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            allow = allow & attention_mask[:, None, None, :]
        if is_causal:
            allow = allow & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        bias = torch.where(allow, 0.0, float("-inf")).to(x.dtype)
        w = (torch.einsum("BHQD,BHKD->BHQK", q, k) * q.shape[-1] ** -0.5 + bias).softmax(-1)
        w = nn.functional.dropout(w, self.p, self.training)
        y = torch.einsum("BHQK,BHKD->BHQD", w, v).movedim(1, 2).flatten(2)
        return self.o_proj(y)
