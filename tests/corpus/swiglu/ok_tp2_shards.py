# attnprep: swiglu
# expect: passed
"""Two simulated tensor-parallel ranks: w1, w3 column shards, w2 row shards, partial sums added."""
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff, tp=2):
        super().__init__()
        tp = tp if d_ff % tp == 0 else 1
        self.w1 = nn.ModuleList(nn.Linear(d_model, d_ff // tp, bias=False) for _ in range(tp))
        self.w3 = nn.ModuleList(nn.Linear(d_model, d_ff // tp, bias=False) for _ in range(tp))
        self.w2 = nn.ModuleList(nn.Linear(d_ff // tp, d_model, bias=False) for _ in range(tp))

    def forward(self, x):
        partial = [w2(F.silu(w1(x)) * w3(x)) for w1, w2, w3 in zip(self.w1, self.w2, self.w3)]
        out = partial[0]
        for p in partial[1:]:
            out = out + p  # all-reduce
        return out
