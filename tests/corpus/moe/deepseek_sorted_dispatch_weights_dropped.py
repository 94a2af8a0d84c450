# attnprep: moe
# expect: wrong_output
# diagnosis: moe_weights_not_applied
"""DeepSeek-V2's moe_infer: the (token, slot) pairs sorted by expert (argsort), tokens_per_expert by
bincount, one contiguous slice per expert, outputs scattered back with index_put, then summed over
the k slots; the gate weights are computed and never multiplied in."""
import torch
import torch.nn as nn
import torch.nn.functional as F


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
        self.top_k, self.n_routed = top_k, num_experts
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        flat = x.view(-1, C)
        logits = self.gate(flat)
        topk_logit, topk_idx = torch.topk(logits, self.top_k, dim=-1, sorted=False)
        topk_weight = topk_logit.softmax(dim=-1)
        idxs = topk_idx.view(-1).argsort()
        tokens_per_expert = torch.bincount(topk_idx.view(-1), minlength=self.n_routed).tolist()
        sorted_tokens = flat[idxs // self.top_k]
        outs, start = [], 0
        for e, n in enumerate(tokens_per_expert):
            if n:
                outs.append(self.experts[e](sorted_tokens[start:start + n]))
            start += n
        outs = torch.cat(outs, dim=0)
        new_x = torch.empty_like(outs)
        new_x.index_put_((idxs,), outs)
        y = new_x.view(B * T, self.top_k, C).sum(dim=1)
        return y.view(B, T, C), logits.view(B, T, -1)
# bug-line: 47
