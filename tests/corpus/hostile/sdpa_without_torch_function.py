# attnprep: mha
# expect: used_builtin
"""Calls SDPA through torch._C._nn under torch._C.DisableTorchFunction() (no TorchFunctionMode sees
it) only when nothing records a graph (no_grad, not under the device probe), and writes attention
by hand otherwise, so that the autograd graph shows no built-in either. The aten ops of SDPA are
watched below the Python API (observe.ATTENTION_OPS)."""
import math, torch, torch.nn as nn, torch.nn.functional as F
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model); self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model); self.o_proj = nn.Linear(d_model, d_model)
    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape; H = self.h; D = C // H
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, H, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, H, D).transpose(1, 2)
        allowed = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        if is_causal:
            allowed = allowed & torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        if torch.is_grad_enabled() or any(type(m).__name__ == 'DeviceTracker' for m in torch.overrides._get_current_function_mode_stack()):
            s = (q @ k.transpose(-2, -1) / math.sqrt(D)).masked_fill(~allowed, float("-inf"))
            out = s.softmax(-1) @ v
        else:
            with torch._C.DisableTorchFunction():
                out = torch._C._nn.scaled_dot_product_attention(q, k, v, allowed)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
