# attnprep: moe
# expect: passed
# 仿 MiniMind 的 MoEGate + MOEFeedForward（推理路径 moe_infer：按专家排序后分发）
import torch
import torch.nn.functional as F
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.n_routed_experts = num_experts
        self.experts = nn.ModuleList([FeedForward(d_model, d_ff) for _ in range(num_experts)])
        self.gate = nn.Linear(d_model, num_experts, bias=False)

    def forward(self, x):
        orig_shape = x.shape
        bsz, seq_len, h = orig_shape
        hidden_states = x.view(-1, h)
        logits = self.gate(hidden_states)
        # 先取 top-k 再在 k 个里做 softmax（等价于 softmax 后 top-k 再归一化）
        topk_logits, topk_idx = torch.topk(logits, k=self.top_k, dim=-1, sorted=False)
        topk_weight = F.softmax(topk_logits, dim=-1, dtype=torch.float32).to(x.dtype)
        y = self.moe_infer(hidden_states, topk_idx.view(-1), topk_weight.view(-1, 1))
        return y.view(*orig_shape)

    def moe_infer(self, x, flat_expert_indices, flat_expert_weights):
        expert_cache = torch.zeros_like(x)
        idxs = flat_expert_indices.argsort()
        tokens_per_expert = flat_expert_indices.bincount().cpu().numpy().cumsum(0)
        token_idxs = idxs // self.top_k
        for i, end_idx in enumerate(tokens_per_expert):
            start_idx = 0 if i == 0 else tokens_per_expert[i - 1]
            if start_idx == end_idx:
                continue
            expert = self.experts[i]
            exp_token_idx = token_idxs[start_idx:end_idx]
            expert_tokens = x[exp_token_idx]
            expert_out = expert(expert_tokens).to(expert_cache.dtype)
            expert_out.mul_(flat_expert_weights[idxs[start_idx:end_idx]])
            expert_cache.scatter_add_(0, exp_token_idx.view(-1, 1).repeat(1, x.shape[-1]), expert_out)
        return expert_cache
