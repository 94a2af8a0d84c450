# attnprep: moe
# expect: passed
"""The slowest correct answer an interviewer still accepts: a Python loop over tokens, and over
each token's chosen experts. Experts as nn.Sequential-free modules named fc1 / fc2 / proj, so
the grader maps them by shape (both assignments of the two same-shaped layers are tried)."""

import torch
import torch.nn as nn


class SwiGLUExpert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff, bias=False)
        self.fc2 = nn.Linear(d_model, d_ff, bias=False)
        self.proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        a = self.fc1(x)
        return self.proj(a * torch.sigmoid(a) * self.fc2(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([SwiGLUExpert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        out = torch.zeros_like(x)
        for b in range(B):
            for t in range(T):
                tok = x[b, t]
                scores = self.router(tok)
                top_vals, top_ids = torch.topk(scores, self.top_k)
                probs = torch.exp(top_vals - top_vals.max())
                probs = probs / probs.sum()
                for p, e in zip(probs, top_ids.tolist()):
                    out[b, t] = out[b, t] + p * self.experts[e](tok)
        return out
