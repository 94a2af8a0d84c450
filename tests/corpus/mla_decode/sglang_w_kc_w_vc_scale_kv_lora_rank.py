# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_scale_kv_rank
"""SGLang's DeepseekV2AttentionMLA absorbed path: w_kc / w_vc cut from kv_b_proj's weight by
unflatten + split, torch.bmm on head-first (H, N, d) tensors, q_input = [q_nope_out, q_pe] against
the latent cache [c_kv, k_pe] as one MQA with a (kv_lora_rank + rope)-wide key."""
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
        self.num_local_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.scaling = self.kv_lora_rank ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, nope, rope = self.num_local_heads, self.qk_nope_head_dim, self.qk_rope_head_dim
        past = 0 if cache is None else cache[0].shape[1]
        freqs = precompute_freqs_cis(rope, past + T, self.rope_theta, device=x.device)[past:]

        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        latent, k_pe = self.wkv_a(x).split([self.kv_lora_rank, rope], dim=-1)
        latent = self.kv_norm(latent)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs).squeeze(2)
        if cache is not None:
            latent = torch.cat([cache[0], latent], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = latent.shape[1]

        w_kc, w_vc = self.wkv_b.weight.unflatten(0, (-1, nope + self.v_head_dim)).split([nope, self.v_head_dim], dim=1)
        w_kc = w_kc.transpose(1, 2).contiguous().transpose(1, 2)   # (H, nope, c)
        w_vc = w_vc.contiguous().transpose(1, 2)                    # (H, c, v)
        q_nope_out = torch.bmm(q_nope.reshape(B * T, H, nope).transpose(0, 1), w_kc)  # (H, B*T, c)
        q_input = torch.cat([q_nope_out.transpose(0, 1).reshape(B, T, H, -1), q_pe], dim=-1)  # (B, T, H, c+rope)
        k_input = torch.cat([latent, k_pe], dim=-1)                                            # (B, S, c+rope)

        scores = torch.einsum("bthe,bse->bhts", q_input, k_input) * self.scaling
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=past)
        scores = scores.masked_fill(~allowed, float("-inf"))
        attn = scores.softmax(dim=-1)
        attn_output = torch.einsum("bhts,bsc->bthc", attn, latent)                              # (B, T, H, c)
        attn_bmm_output = torch.bmm(attn_output.reshape(B * T, H, -1).transpose(0, 1), w_vc)    # (H, B*T, v)
        out = attn_bmm_output.transpose(0, 1).reshape(B, T, H * self.v_head_dim)
        return self.wo(out), (latent, k_pe)
# bug-line: 43
