# attnprep: cross_attention
# expect: wrong_output
# diagnosis: missing_scale
"""T5 habit: T5 folds the scale into its initialisation, so the candidate writes no 1/sqrt(d) at all."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.n_heads, self.d_kv = num_heads, d_model // num_heads
        kv_in = d_context if d_context is not None else d_model
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(kv_in, d_model)
        self.v = nn.Linear(kv_in, d_model)
        self.o = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        B = x.shape[0]
        shape = lambda s: s.view(B, -1, self.n_heads, self.d_kv).transpose(1, 2)
        q, k, v = shape(self.q(x)), shape(self.k(context)), shape(self.v(context))
        scores = torch.matmul(q, k.transpose(3, 2))
        if context_mask is not None:
            scores = scores + (1.0 - context_mask[:, None, None, :].float()) * torch.finfo(scores.dtype).min
        w = F.softmax(scores.float(), dim=-1).type_as(scores)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().view(B, -1, self.n_heads * self.d_kv)
        return self.o(out)
