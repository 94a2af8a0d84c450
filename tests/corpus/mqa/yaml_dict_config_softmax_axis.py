# attnprep: mqa
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""A YAML-dict config habit: the model's settings as the nested dict a yaml.safe_load of the run's
config file gives (a literal here), read with cfg["attention"]["..."] lookups in forward."""
import math

import torch
import torch.nn as nn

CONFIG = {
    "attention": {
        "kind": "multi_query",
        "mask_value": -1.0e9,
        "softmax_axis": -2,
        "bias": True,
    },
}


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, cfg=CONFIG):
        super().__init__()
        self.cfg = cfg["attention"]
        self.n_head = num_heads
        self.d_head = d_model // num_heads
        bias = self.cfg["bias"]
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, self.d_head, bias=bias)
        self.v_proj = nn.Linear(d_model, self.d_head, bias=bias)
        self.o_proj = nn.Linear(d_model, d_model, bias=bias)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).reshape(B, T, self.n_head, self.d_head).permute(0, 2, 1, 3)  # (B, H, T, D)
        k = self.k_proj(x)[:, None]  # (B, 1, T, D): one key head for all query heads
        v = self.v_proj(x)[:, None]
        att = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.d_head))
        fill = self.cfg["mask_value"]
        if is_causal:
            att = att.masked_fill(torch.ones(T, T, device=x.device).triu(1).bool(), fill)
        if attention_mask is not None:
            att = att.masked_fill(attention_mask[:, None, None, :] == 0, fill)
        att = self.drop(att.softmax(dim=self.cfg["softmax_axis"]))
        y = torch.matmul(att, v).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.o_proj(y)
# bug-line: 15
