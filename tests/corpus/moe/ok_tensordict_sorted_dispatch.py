# attnprep: moe
# expect: passed
"""A TensorDict-like routing table (a dict of equally long tensors sorted together by expert),
argsort dispatch, torch.split by bincount, the weighted outputs scattered back with index_add."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def td_sort(td, key):
    order = torch.argsort(td[key], stable=True)
    return {k: v[order] for k, v in td.items()}


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.E, self.k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        N = flat.shape[0]
        router_logits = self.gate(flat)
        top_val, top_idx = router_logits.topk(self.k, dim=-1)
        top_w = F.softmax(top_val, dim=-1, dtype=torch.float32).to(flat.dtype)
        td = {
            "token": torch.arange(N, device=x.device).repeat_interleave(self.k),
            "expert": top_idx.reshape(-1),
            "weight": top_w.reshape(-1),
        }
        td = td_sort(td, "expert")
        counts = torch.bincount(td["expert"], minlength=self.E).tolist()
        out = torch.zeros_like(flat)
        for e, tok, w in zip(range(self.E), td["token"].split(counts), td["weight"].split(counts)):
            if tok.numel():
                out.index_add_(0, tok, self.experts[e](flat[tok]) * w[:, None])
        return out.view(shape)
