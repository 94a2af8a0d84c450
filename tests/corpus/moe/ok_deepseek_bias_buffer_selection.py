# attnprep: moe
# expect: passed
"""DeepSeek-V3's auxiliary-loss-free balancing: an e_score_correction_bias buffer (zero until a
balancing step updates it) is added to the scores for the choice of the experts only; the weights
come from the unbiased logits. Experts as one stacked parameter per matrix, run with index_select."""
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
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.register_buffer("e_score_correction_bias", torch.zeros(num_experts))
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        shape = x.shape
        h = x.reshape(-1, shape[-1])
        logits = self.gate(h)
        choice = logits + self.e_score_correction_bias.to(logits.dtype)
        topk_idx = choice.topk(self.top_k, dim=-1).indices
        topk_w = logits.gather(1, topk_idx).softmax(dim=-1)
        y = torch.zeros_like(h)
        for e in range(len(self.experts)):
            rows, slot = (topk_idx == e).nonzero(as_tuple=True)
            if rows.numel():
                y.index_add_(0, rows, topk_w[rows, slot, None] * self.experts[e](h.index_select(0, rows)))
        return y.view(shape), logits.view(*shape[:-1], -1)
