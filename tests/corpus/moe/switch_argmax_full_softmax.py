# attnprep: moe
# expect: wrong_output
# diagnosis: moe_top1 + moe_softmax_all_experts
"""Switch Transformer's router (Fedus et al.) in a Mixtral block: router probabilities softmaxed over
all experts, argmax picks one expert, and the token's output is scaled by that expert's probability."""
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
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        router_logits = self.gate(x)
        router_probs = torch.softmax(router_logits, dim=-1)
        expert_index = torch.argmax(router_probs, dim=-1)
        expert_prob = router_probs.gather(-1, expert_index[..., None])
        next_states = torch.zeros_like(x)
        for idx, expert in enumerate(self.experts):
            token_indices = expert_index == idx
            if token_indices.any():
                next_states[token_indices] = expert(x[token_indices]).to(next_states.dtype)
        return next_states * expert_prob, router_logits
# bug-line: 31, 32
