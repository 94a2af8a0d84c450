# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_cache_before_norm + mla_absorb_rows
"""FlashInfer's MLA wrapper vocabulary: ckv_cache / kpe_cache, q_nope absorbed into the latent space
("q_nope @ W_UK"), sm_scale passed in, the value up-projection W_UV applied to the kernel's output;
the two matrices cut from wkv_b once, in __init__-time style helpers."""
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
        self.num_heads, self.head_dim_ckv, self.head_dim_kpe = num_heads, kv_lora_rank, qk_rope_head_dim
        self.nope, self.dv, self.rope_theta = qk_nope_head_dim, v_head_dim, rope_theta
        self.sm_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def absorbed_weights(self):
        H, n, dv, c = self.num_heads, self.nope, self.dv, self.head_dim_ckv
        w = self.wkv_b.weight                                   # (H * (n + dv), c)
        W_UK = w[: H * n].view(H, n, c)
        W_UV = w[H * n:].view(H, dv, c)
        return W_UK, W_UV

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, c, r = self.num_heads, self.head_dim_ckv, self.head_dim_kpe
        past = 0 if cache is None else cache[0].shape[1]
        freqs = precompute_freqs_cis(r, past + T, self.rope_theta, device=x.device)[past:]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, self.nope + r)
        q_nope, q_pe = q.split([self.nope, r], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        ckv, kpe = self.wkv_a(x).split([c, r], dim=-1)
        kpe = apply_rotary_emb(kpe.unsqueeze(2), freqs).squeeze(2)
        ckv_cache = ckv if cache is None else torch.cat([cache[0], ckv], dim=1)
        kpe_cache = kpe if cache is None else torch.cat([cache[1], kpe], dim=1)
        S = ckv_cache.shape[1]

        W_UK, W_UV = self.absorbed_weights()
        q_latent = torch.einsum("bthn,hnc->bthc", q_nope, W_UK)
        latent = self.kv_norm(ckv_cache)
        logits = (torch.einsum("bthc,bsc->bhts", q_latent, latent)
                  + torch.einsum("bthr,bsr->bhts", q_pe, kpe_cache)) * self.sm_scale
        keep = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(past)
        p = logits.masked_fill(~keep, float("-inf")).softmax(-1)
        o_latent = torch.einsum("bhts,bsc->bthc", p, latent)
        o = torch.einsum("bthc,hvc->bthv", o_latent, W_UV)
        return self.wo(o.reshape(B, T, H * self.dv)), (ckv_cache, kpe_cache)
# bug-line: 53, 54, 67, 73
