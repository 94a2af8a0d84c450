# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero
"""vLLM habits: a RotaryEmbedding with its cos_sin_cache buffer built once for max_position_embeddings,
looked up with index_select(0, positions) and chunked into (cos, sin), GPT-J (interleaved) pairs as
DeepSeek's is_neox_style=False; positions made by the layer itself from the number of new tokens."""
import torch
from torch import nn


class RotaryEmbedding(nn.Module):
    def __init__(self, rotary_dim, max_position_embeddings, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=torch.float) / rotary_dim))
        t = torch.arange(max_position_embeddings, dtype=torch.float)
        freqs = torch.einsum("i,j->ij", t, inv_freq)
        self.register_buffer("cos_sin_cache", torch.cat((freqs.cos(), freqs.sin()), dim=-1), persistent=False)

    def forward(self, positions, x):  # x (num_tokens, ..., rotary_dim)
        cos_sin = self.cos_sin_cache.index_select(0, positions)
        cos, sin = cos_sin.chunk(2, dim=-1)
        while cos.dim() < x.dim():
            cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_local_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_a_layernorm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.q_b_proj = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.kv_b_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.o_proj = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.rotary_emb = RotaryEmbedding(qk_rope_head_dim, 4096, rope_theta)
        self.scaling = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5

    def forward(self, hidden_states, kv_cache=None):
        bsz, num_tokens, _ = hidden_states.shape
        past = 0 if kv_cache is None else kv_cache[0].shape[1]
        positions = torch.arange(num_tokens, device=hidden_states.device)
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
        q = q.view(bsz, num_tokens, self.num_local_heads, self.qk_nope_head_dim + self.qk_rope_head_dim)
        q_nope, q_pe = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        latent_cache = self.kv_a_proj_with_mqa(hidden_states)
        kv_c, k_pe = latent_cache.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        kv_c_normed = self.kv_a_layernorm(kv_c)
        q_pe = self.rotary_emb(positions, q_pe.transpose(0, 1)).transpose(0, 1)  # tokens first, as vLLM
        k_pe = self.rotary_emb(positions, k_pe.transpose(0, 1)).transpose(0, 1)
        if kv_cache is not None:
            kv_c_normed = torch.cat([kv_cache[0], kv_c_normed], dim=1)
            k_pe = torch.cat([kv_cache[1], k_pe], dim=1)
        W_UK, W_UV = self.kv_b_proj.weight.view(
            self.num_local_heads, self.qk_nope_head_dim + self.v_head_dim, self.kv_lora_rank
        ).split([self.qk_nope_head_dim, self.v_head_dim], dim=1)
        ql_nope = torch.einsum("bthd,hdc->bhtc", q_nope, W_UK)
        scores = torch.einsum("bhtc,bsc->bhts", ql_nope, kv_c_normed)
        scores = (scores + torch.einsum("bthr,bsr->bhts", q_pe, k_pe)) * self.scaling
        kv_len = kv_c_normed.shape[1]
        visible = torch.arange(kv_len, device=scores.device)[None, :] <= past + torch.arange(num_tokens, device=scores.device)[:, None]
        probs = scores.masked_fill(~visible, float("-inf")).softmax(dim=-1)
        o = torch.einsum("bhts,bsc->bthc", probs, kv_c_normed)
        o = torch.einsum("bthc,hvc->bthv", o, W_UV)
        return self.o_proj(o.reshape(bsz, num_tokens, -1)), (kv_c_normed, k_pe)
# bug-line: 47
