# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
"""transformers v5 Mixtral layout (experts stacked as gate_up_proj (E, 2F, D) and down_proj (E, D, F), a
router module holding weight); the router takes the softmax over all experts and keeps the top-k of
it without renormalising them."""

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class MixtralExperts(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_local_experts
        self.hidden_dim = config.hidden_size
        self.intermediate_dim = config.intermediate_size
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * self.intermediate_dim, self.hidden_dim))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim, self.intermediate_dim))
        nn.init.normal_(self.gate_up_proj, std=0.02)
        nn.init.normal_(self.down_proj, std=0.02)
        self.act_fn = F.silu

    def forward(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        with torch.no_grad():
            expert_mask = F.one_hot(top_k_index, num_classes=self.num_experts).permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[token_idx]
            gate, up = F.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
            current = self.act_fn(gate) * up
            current = F.linear(current, self.down_proj[expert_idx])
            current = current * top_k_weights[token_idx, top_k_pos, None]
            final_hidden_states.index_add_(0, token_idx, current.to(final_hidden_states.dtype))
        return final_hidden_states


class MixtralTopKRouter(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.weight = nn.Parameter(torch.empty(config.num_local_experts, config.hidden_size))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, hidden_states):
        router_logits = F.linear(hidden_states, self.weight)
        routing_weights = F.softmax(router_logits, dim=-1, dtype=torch.float32)
        router_scores, router_indices = torch.topk(routing_weights, self.top_k, dim=-1)
        router_scores = router_scores.to(hidden_states.dtype)
        return router_logits, router_scores, router_indices


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        config = SimpleNamespace(hidden_size=d_model, intermediate_size=d_ff, num_local_experts=num_experts,
                                 num_experts_per_tok=top_k)
        self.gate = MixtralTopKRouter(config)
        self.experts = MixtralExperts(config)

    def forward(self, x):
        batch_size, sequence_length, hidden_dim = x.shape
        hidden_states = x.view(-1, hidden_dim)
        router_logits, top_k_weights, top_k_index = self.gate(hidden_states)
        out = self.experts(hidden_states, top_k_index, top_k_weights)
        return out.reshape(batch_size, sequence_length, hidden_dim), router_logits
# bug-line: 53
