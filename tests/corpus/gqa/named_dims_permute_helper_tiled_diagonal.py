# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled + causal_masks_diagonal
"""Mesh-TensorFlow-like named dimensions without einops: a `to(t, "bthd", "bhtd")` helper permutes by
letters, sizes are looked up in a dims dict, the KV heads are broadcast to the query heads by a
helper that also works by letters."""
import math

import torch
import torch.nn as nn


def to(t, src, dst):
    return t.permute(*[src.index(c) for c in dst])


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.dims = {"h": num_heads, "g": num_kv_heads, "d": d_model // num_heads}
        d = self.dims["d"]
        self.q_proj = nn.Linear(d_model, num_heads * d)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d)
        self.o_proj = nn.Linear(num_heads * d, d_model)
        self.drop = nn.Dropout(dropout)

    def broadcast_heads(self, t):
        # "bgtd" -> "bhtd": every kv head serves h // g query heads
        reps = self.dims["h"] // self.dims["g"]
        return t.repeat(1, reps, 1, 1)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, t, _ = x.shape
        h, g, d = self.dims["h"], self.dims["g"], self.dims["d"]
        q = to(self.q_proj(x).view(b, t, h, d), "bthd", "bhtd")
        k = self.broadcast_heads(to(self.k_proj(x).view(b, t, g, d), "btgd", "bgtd"))
        v = self.broadcast_heads(to(self.v_proj(x).view(b, t, g, d), "btgd", "bgtd"))
        logits = q @ to(k, "bhsd", "bhds") / math.sqrt(d)
        if attention_mask is not None:
            logits = logits.masked_fill(~attention_mask.view(b, 1, 1, t), float("-inf"))
        if is_causal:
            s_idx = torch.arange(t, device=x.device)
            logits = logits.masked_fill(s_idx[None, :] >= s_idx[:, None], float("-inf"))
        w = self.drop(logits.softmax(-1))
        out = to(w @ v, "bhtd", "bthd").reshape(b, t, h * d)
        return self.o_proj(out)
# bug-line: 31, 44
