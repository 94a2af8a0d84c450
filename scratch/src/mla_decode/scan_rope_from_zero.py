# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero
"""The absorb path written in a scan style (the new tokens' latents appended, then one pass); the
rotations are precomputed for the new tokens only, so every step's q_pe and k_pe restart at position 0."""

%%MLA%%

class MLADecode(nn.Module):
    def __init__(self, d_model: int, num_heads: int, q_lora_rank: int, kv_lora_rank: int, qk_nope_head_dim: int, qk_rope_head_dim: int, v_head_dim: int, rope_theta: float = 10000.0):
        super().__init__()
        self.n_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.softmax_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None):
        bsz, seqlen, _ = x.shape
        H, nope, rope, dv = self.n_heads, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        freqs_cis = precompute_freqs_cis(rope, seqlen, self.rope_theta, device=x.device)  #<<
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], -1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, rope], -1)
        kv = self.kv_norm(kv)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        if cache is not None:
            kv, k_pe = torch.cat([cache[0], kv], 1), torch.cat([cache[1], k_pe], 1)
        end = kv.size(1)
        start = end - seqlen
        w = self.wkv_b.weight.view(H, -1, self.kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, w[:, :nope])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv) + torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale
        mask = torch.full((seqlen, end), float("-inf"), device=x.device).triu(start + 1)
        scores = scores + mask.unsqueeze(1)
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        o = torch.einsum("bsht,btc->bshc", scores, kv)
        o = torch.einsum("bshc,hdc->bshd", o, w[:, -dv:])
        return self.wo(o.flatten(2)), (kv, k_pe)
