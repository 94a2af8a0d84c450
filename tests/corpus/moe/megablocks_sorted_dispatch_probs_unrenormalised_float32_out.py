# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts + output_dtype_not_kept
"""MegaBlocks-style dispatch: the (token, slot) pairs sorted by expert with argsort, the tokens
gathered in that order and cut into one contiguous chunk per expert with torch.split(bincount),
un-permuted with index_add_; the chosen experts' softmax probabilities used without
renormalising, and the float32 accumulator returned as it is."""
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
        self.num_experts = num_experts
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        tokens = x.reshape(-1, C)
        logits = self.gate(tokens)
        probs = logits.float().softmax(dim=-1)
        top_w, top_e = probs.topk(self.top_k, dim=-1)  # (N, k)
        flat_e = top_e.reshape(-1)  # (N * k,)
        flat_w = top_w.reshape(-1)
        flat_tok = torch.arange(tokens.shape[0], device=x.device).repeat_interleave(self.top_k)
        order = torch.argsort(flat_e, stable=True)
        bins = torch.bincount(flat_e, minlength=self.num_experts).tolist()
        out = torch.zeros(tokens.shape, dtype=torch.float32, device=x.device)
        for e, (tok, w) in enumerate(zip(torch.split(flat_tok[order], bins), torch.split(flat_w[order], bins))):
            if tok.numel() == 0:
                continue
            y = self.experts[e](tokens[tok]).float() * w[:, None]
            out.index_add_(0, tok, y)
        return out.view(B, T, C), logits.view(B, T, -1)
# bug-line: 37, 49
