# attnprep: mha
# expect: passed
# torch.nn.utils.skip_init: layers allocated uninitialised (the caller initialises them later).
import math
import torch
import torch.nn as nn
from torch.nn.utils import skip_init


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            layer = skip_init(nn.Linear, d_model, d_model)
            with torch.no_grad():
                nn.init.xavier_uniform_(layer.weight)
                layer.bias.zero_()
            self.add_module(name, layer)
        self.p = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        split = lambda t: t.unflatten(-1, (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        scores = torch.matmul(q, k.transpose(2, 3)) * self.head_dim ** -0.5
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask.view(B, 1, 1, T)
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(keep.logical_not(), torch.finfo(scores.dtype).min)
        w = torch.softmax(scores, dim=-1)
        w = nn.functional.dropout(w, self.p, self.training)
        out = torch.matmul(w, v).permute(0, 2, 1, 3).flatten(2)
        return self.o_proj(out)
