# attnprep: gqa
# expect: wrong_output
# diagnosis: causal_masks_diagonal + missing_scale
"""The KV heads expanded by a matrix product: E = kron(eye(KV), ones(G, 1)) is (H, KV), and
einsum('hg,bgtd->bhtd', E, k) gives query head h its KV head h // G; the causal mask from
torch.cartesian_prod of the positions; scores by torch.baddbmm-free einsum."""
import torch
import torch.nn as nn


def expansion(num_heads, num_kv_heads, device, dtype):
    group = num_heads // num_kv_heads
    return torch.kron(torch.eye(num_kv_heads, device=device, dtype=dtype),
                      torch.ones(group, 1, device=device, dtype=dtype))  # (H, KV)


def future_of(T, device):
    pairs = torch.cartesian_prod(torch.arange(T, device=device), torch.arange(T, device=device))  # (T*T, 2): (i, j)
    return (pairs[:, 1] >= pairs[:, 0]).view(T, T)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.H, self.KV, self.D = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.D)
        k = self.k_proj(x).view(B, T, self.KV, self.D)
        v = self.v_proj(x).view(B, T, self.KV, self.D)
        E = expansion(self.H, self.KV, x.device, x.dtype)
        k = torch.einsum("hg,btgd->bhtd", E, k)
        v = torch.einsum("hg,btgd->bhtd", E, v)
        s = torch.einsum("bqhd,bhkd->bhqk", q, k)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(future_of(T, x.device), float("-inf"))
        p = self.attn_drop(s.softmax(dim=-1))
        o = torch.einsum("bhqk,bhkd->bqhd", p, v).reshape(B, T, C)
        return self.o_proj(o)
# bug-line: 19, 40
