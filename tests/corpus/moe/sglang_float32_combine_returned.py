# attnprep: moe
# expect: wrong_output
# diagnosis: output_dtype_not_kept
"""SGLang-style moe_sum in float32 (the combine buffer is float32 "for accuracy") and never cast
back: right in float32, but a bfloat16 module and input get a float32 output."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k, self.num_experts = top_k, num_experts
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(
            nn.ModuleDict(dict(w1=nn.Linear(d_model, d_ff, bias=False), w2=nn.Linear(d_ff, d_model, bias=False),
                               w3=nn.Linear(d_model, d_ff, bias=False)))
            for _ in range(num_experts))

    def forward(self, x):
        orig_shape = x.shape
        x = x.view(-1, orig_shape[-1])
        router_logits = self.gate(x)
        topk_logits, topk_ids = router_logits.topk(self.top_k, dim=-1)
        topk_weights = topk_logits.float().softmax(dim=-1)
        moe_sum = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
        for e in range(self.num_experts):
            tok, slot = (topk_ids == e).nonzero(as_tuple=True)
            if tok.numel() == 0:
                continue
            ex = self.experts[e]
            y = ex["w2"](F.silu(ex["w1"](x[tok])) * ex["w3"](x[tok]))
            moe_sum.index_add_(0, tok, y.float() * topk_weights[tok, slot, None])
        return moe_sum.view(orig_shape)
# bug-line: 36
