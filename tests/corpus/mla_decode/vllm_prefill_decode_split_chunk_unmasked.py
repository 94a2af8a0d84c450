# attnprep: mla_decode
# expect: mask_leak
# diagnosis: cache_chunk_unmasked
"""vLLM's MLA backend split into _forward_prefill (no cache yet: causal over the prompt) and
_forward_decode (a cache: the new tokens attend to everything cached and new), both on the absorbed
form; W_UK_T / W_UV prepared by process_weights_after_loading-like code."""
import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous()
    y = torch.view_as_complex(pairs) * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _weights(self):
        kv_b = self.wkv_b.weight.view(self.num_heads, self.qk_nope_head_dim + self.v_head_dim, self.kv_lora_rank)
        W_UK, W_UV = kv_b.split([self.qk_nope_head_dim, self.v_head_dim], dim=1)
        return W_UK.transpose(1, 2), W_UV            # W_UK_T (H, c, nope), W_UV (H, v, c)

    def _attend(self, q_nope, q_pe, kv_c, k_pe, mask):
        W_UK_T, W_UV = self._weights()
        ql_nope = torch.einsum("bthn,hcn->bthc", q_nope, W_UK_T)
        s = (torch.einsum("bthc,bsc->bhts", ql_nope, kv_c) + torch.einsum("bthr,bsr->bhts", q_pe, k_pe)) * self.scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        o = torch.einsum("bhts,bsc->bthc", s.softmax(-1), kv_c)
        return torch.einsum("bthc,hvc->bthv", o, W_UV).flatten(2)

    def _forward_prefill(self, q_nope, q_pe, kv_c, k_pe):
        T = q_nope.shape[1]
        return self._attend(q_nope, q_pe, kv_c, k_pe, torch.ones(T, T, dtype=torch.bool, device=q_nope.device).tril())

    def _forward_decode(self, q_nope, q_pe, kv_c, k_pe):
        return self._attend(q_nope, q_pe, kv_c, k_pe, None)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, nope, rope = self.num_heads, self.qk_nope_head_dim, self.qk_rope_head_dim
        past = 0 if cache is None else cache[0].shape[1]
        freqs = precompute_freqs_cis(rope, past + T, self.rope_theta, device=x.device)[past:]
        q_nope, q_pe = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope).split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        kv_c, k_pe = self.wkv_a(x).split([self.kv_lora_rank, rope], dim=-1)
        kv_c = self.kv_norm(kv_c)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs).squeeze(2)
        if cache is None:
            out = self._forward_prefill(q_nope, q_pe, kv_c, k_pe)
        else:
            kv_c = torch.cat([cache[0], kv_c], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
            out = self._forward_decode(q_nope, q_pe, kv_c, k_pe)
        return self.wo(out), (kv_c, k_pe)
# bug-line: 70
