# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
"""OLMoE's OlmoeSparseMoeBlock: `norm_topk_prob` from the config (OLMoE ships it False), the
router softmax in float32 over all experts, top-k of the probabilities, the expert loop over a
one_hot expert mask with torch.where, index_add_ back; experts with gate_proj / up_proj /
down_proj names."""
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class OlmoeMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.config = SimpleNamespace(num_experts=num_experts, num_experts_per_tok=top_k, norm_topk_prob=False)
        self.num_experts = num_experts
        self.top_k = top_k
        self.norm_topk_prob = self.config.norm_topk_prob
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([OlmoeMLP(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = self.experts[expert_idx](current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits
# bug-line: 29
