# attnprep: kv_cache
# expect: passed
# einsum over a (B, G, n_rep, T, D) view: no repeat, a -1e9 fill through torch.where, cache as a list.
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.H, self.G, self.D = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        H, G, D = self.H, self.G, self.D
        r = H // G
        q = self.q_proj(x).view(B, T, G, r, D)
        k = self.k_proj(x).view(B, T, G, D).permute(0, 2, 1, 3)
        v = self.v_proj(x).view(B, T, G, D).permute(0, 2, 1, 3)
        if cache:
            k = torch.cat([cache[0], k], dim=-2)
            v = torch.cat([cache[1], v], dim=-2)
        S = k.shape[-2]
        s = torch.einsum("btgrd,bgsd->bgrts", q, k) * D ** -0.5
        pos_q = torch.arange(S - T, S, device=x.device)
        pos_k = torch.arange(S, device=x.device)
        s = torch.where(pos_k[None, :] <= pos_q[:, None], s, torch.tensor(-1e9, device=x.device))
        p = s.softmax(-1)
        o = torch.einsum("bgrts,bgsd->btgrd", p, v).reshape(B, T, C)
        return self.o_proj(o), [k, v]
