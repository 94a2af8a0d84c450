# attnprep: moe
# expect: passed
# A port of mlx_lm's SwitchGLU keeping MLX's habits: __call__ instead of forward (MLX modules have no
# forward), the experts as 3-d stacks (E, d_ff, d_model) / (E, d_model, d_ff) gathered per (token, slot),
# mx.argpartition written as topk.
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwitchLinear(nn.Module):
    def __init__(self, input_dims, output_dims, num_experts):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_experts, output_dims, input_dims) * input_dims ** -0.5)

    def __call__(self, x, indices):
        # x (N, k, in), indices (N, k) -> (N, k, out)
        return torch.einsum("nki,nkoi->nko", x, self.weight[indices])


class SwitchGLU(nn.Module):
    def __init__(self, input_dims, hidden_dims, num_experts):
        super().__init__()
        self.gate_proj = SwitchLinear(input_dims, hidden_dims, num_experts)
        self.up_proj = SwitchLinear(input_dims, hidden_dims, num_experts)
        self.down_proj = SwitchLinear(hidden_dims, input_dims, num_experts)

    def __call__(self, x, indices):
        x_up = self.up_proj(x, indices)
        x_gate = self.gate_proj(x, indices)
        return self.down_proj(F.silu(x_gate) * x_up, indices)


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.num_experts_per_tok = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.switch_mlp = SwitchGLU(d_model, d_ff, num_experts)

    def __call__(self, x):
        B, T, C = x.shape
        k = self.num_experts_per_tok
        gates = self.gate(x)
        scores, inds = torch.topk(gates, k, dim=-1)
        scores = scores.softmax(dim=-1)
        h = x.reshape(B * T, 1, C).expand(-1, k, -1)
        y = self.switch_mlp(h, inds.reshape(B * T, k))  # (N, k, C)
        return (y * scores.reshape(B * T, k, 1)).sum(dim=1).reshape(B, T, C)
