# attnprep: mla_decode
# expect: passed
"""DeepSeek-V2's remark taken literally: W_UV folded into wo at forward time (wo.weight viewed (d, H, dv) contracted with W_UV into a (d, H, c) matrix), the HF-ish kv_b_proj-free names kept as the contract's; einsum throughout; RoPE by the rotation written on (even, odd) halves."""
import torch
import torch.nn as nn


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c, self.dn, self.dr, self.dv = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.register_buffer("inv_freq", 1.0 / rope_theta ** (torch.arange(0, qk_rope_head_dim, 2).float() / qk_rope_head_dim), persistent=False)
        self.scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _rope(self, x, start):
        T = x.shape[1]
        ang = torch.arange(start, start + T, device=x.device, dtype=torch.float32)[:, None] * self.inv_freq
        if x.dim() == 4:
            ang = ang[:, None]
        e, o = x[..., ::2], x[..., 1::2]
        out = torch.empty_like(x)
        out[..., ::2] = e * ang.cos() - o * ang.sin()
        out[..., 1::2] = e * ang.sin() + o * ang.cos()
        return out

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        start = cache[0].shape[1] if cache is not None else 0
        q_nope, q_pe = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.h, -1).split([self.dn, self.dr], -1)
        q_pe = self._rope(q_pe, start)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.dr], -1)
        c_kv, k_pe = self.kv_norm(c_kv), self._rope(k_pe, start)
        if cache is not None:
            c_kv, k_pe = torch.cat([cache[0], c_kv], 1), torch.cat([cache[1], k_pe], 1)
        S = start + T
        w = self.wkv_b.weight.view(self.h, self.dn + self.dv, self.c)
        q_lat = torch.einsum("bthn,hnc->bthc", q_nope, w[:, : self.dn])
        s = (torch.einsum("bthc,bsc->bhts", q_lat, c_kv) + torch.einsum("bthr,bsr->bhts", q_pe, k_pe)) * self.scale
        s = s + torch.full((T, S), float("-inf"), device=x.device).triu(start + 1)
        p = s.softmax(-1)
        o_lat = torch.einsum("bhts,bsc->bthc", p, c_kv)
        w_o = torch.einsum("dhv,hvc->dhc", self.wo.weight.view(-1, self.h, self.dv), w[:, self.dn:])  # (d, H, c)
        return torch.einsum("bthc,dhc->btd", o_lat, w_o), (c_kv, k_pe)
