# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
"""functools.total_ordering habits: each (token, expert) choice is a Candidate object ordered by its
router score, and the top-k are picked by sorted(..., reverse=True); the scores were probabilities
over all experts, and the picked ones were used without renormalising."""
from functools import total_ordering

import torch
import torch.nn as nn
import torch.nn.functional as F


@total_ordering
class Candidate:
    def __init__(self, expert, score, weight):
        self.expert, self.score, self.weight = expert, score, weight

    def __eq__(self, other):
        return self.score == other.score

    def __lt__(self, other):
        return self.score < other.score


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
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(-1, C)
        logits = self.gate(flat)  # (N, E)
        probs = logits.softmax(dim=-1)  # (N, E)
        out = torch.zeros_like(flat)
        for n in range(flat.shape[0]):
            cands = [Candidate(e, logits[n, e].item(), probs[n, e]) for e in range(len(self.experts))]
            chosen = sorted(cands, reverse=True)[: self.top_k]
            weights = torch.stack([c.weight for c in chosen])
            for w, c in zip(weights, chosen):
                out[n] = out[n] + w * self.experts[c.expert](flat[n : n + 1])[0]
        return out.view(B, T, C), logits.view(B, T, -1)
# bug-line: 53
