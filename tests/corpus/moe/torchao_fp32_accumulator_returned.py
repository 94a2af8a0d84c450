# attnprep: moe
# expect: wrong_output
# diagnosis: output_dtype_not_kept
"""torchao / low-precision habits: the router in float32 ("router_dtype"), the combine buffer kept in
float32 for accuracy (`acc_dtype`), experts run in the activations' dtype, weights cast to the
expert output's dtype before the product. The float32 accumulator is returned as it is: right in
float32, but a bfloat16 or float16 input comes back as float32."""

import torch
import torch.nn as nn
import torch.nn.functional as F

router_dtype = torch.float32
acc_dtype = torch.float32


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(-1, C)
        logits = self.gate(flat)  # (N, E) in x's dtype
        top_logits, top_idx = logits.to(router_dtype).topk(self.top_k, dim=-1)
        weights = top_logits.softmax(dim=-1)  # (N, k) float32
        out = torch.zeros(flat.shape, dtype=acc_dtype, device=x.device)
        for e, expert in enumerate(self.experts):
            tok, slot = (top_idx == e).nonzero(as_tuple=True)
            if tok.numel() == 0:
                continue
            y = expert(flat[tok])
            out.index_add_(0, tok, y.to(acc_dtype) * weights[tok, slot, None])
        return out.view(B, T, C), logits.view(B, T, -1)
# bug-line: 48
