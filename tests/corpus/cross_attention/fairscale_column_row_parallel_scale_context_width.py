# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""Meta's original llama code habits (fairscale's ColumnParallelLinear / RowParallelLinear with
gather_output / input_is_parallel and init_method, here thin nn.Linear subclasses at model-parallel
size 1; n_local_heads; wq / wk / wv / wo), as a cross-attention; the scores divided by the square
root of the context's width instead of the head's."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ColumnParallelLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, gather_output=True, init_method=lambda x: x):
        super().__init__(in_features, out_features, bias=bias)
        self.gather_output = gather_output


class RowParallelLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, input_is_parallel=False, init_method=lambda x: x):
        super().__init__(in_features, out_features, bias=bias)
        self.input_is_parallel = input_is_parallel


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        model_parallel_size = 1  # fs_init.get_model_parallel_world_size()
        d_context = d_model if d_context is None else d_context
        self.n_local_heads = num_heads // model_parallel_size
        self.head_dim = d_model // num_heads
        self.context_dim = d_context
        self.wq = ColumnParallelLinear(d_model, num_heads * self.head_dim, gather_output=False)
        self.wk = ColumnParallelLinear(d_context, num_heads * self.head_dim, gather_output=False)
        self.wv = ColumnParallelLinear(d_context, num_heads * self.head_dim, gather_output=False)
        self.wo = RowParallelLinear(num_heads * self.head_dim, d_model, input_is_parallel=True)
        self.dropout = dropout

    def forward(self, x, context, context_mask=None):
        bsz, seqlen, _ = x.shape
        ctxlen = context.shape[1]
        xq = self.wq(x).view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = self.wk(context).view(bsz, ctxlen, self.n_local_heads, self.head_dim)
        xv = self.wv(context).view(bsz, ctxlen, self.n_local_heads, self.head_dim)
        xq, keys, values = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.context_dim)
        if context_mask is not None:
            scores = scores + torch.zeros_like(context_mask, dtype=scores.dtype).masked_fill(~context_mask, float("-inf"))[:, None, None, :]
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        scores = F.dropout(scores, p=self.dropout, training=self.training)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)
# bug-line: 48
