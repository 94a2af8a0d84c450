# attnprep: moe
# expect: wrong_output
# diagnosis: moe_top1
"""MiniMax's sparse block naming (MiniMaxSparseMoeBlock: block_sparse_moe, num_local_experts,
num_experts_per_tok, router_jitter_noise kept at 0, experts with w1 / w2 / w3); the number of
experts per token read from a config attribute that the constructor sets to 1."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniMaxBlockSparseTop2MLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, hidden_states):
        return self.w2(F.silu(self.w1(hidden_states)) * self.w3(hidden_states))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.hidden_dim = d_model
        self.num_local_experts = num_experts
        self.num_experts_per_tok = 1 if top_k else 0
        self.router_jitter_noise = 0.0
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(MiniMaxBlockSparseTop2MLP(d_model, d_ff) for _ in range(num_experts))

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.num_experts_per_tok, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_local_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_local_experts):
            idx, top_x = torch.where(expert_mask[expert_idx])
            if top_x.numel() == 0:
                continue
            current_state = hidden_states[top_x]
            current_hidden = self.experts[expert_idx](current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden)
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits
# bug-line: 28
