# attnprep: mla
# expect: wrong_output
# diagnosis: rope_rotate_half
"""The stub's helpers left aside for a Llama-style rotate_half RoPE written by hand (cos/sin of the same
angles, halves instead of adjacent pairs), scores by torch.bmm over flattened heads."""

%%MLA%%

def rope_llama(x, theta):
    # x: (B, T, H, r)
    T, r = x.shape[1], x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = torch.outer(torch.arange(T, device=x.device, dtype=torch.float32), inv)
    cos = torch.cat([ang.cos(), ang.cos()], -1)[None, :, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[None, :, None, :]
    x1, x2 = x.chunk(2, dim=-1)  #<<
    return (x * cos + torch.cat([-x2, x1], -1) * sin).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, q_lora_rank: int, kv_lora_rank: int, qk_nope_head_dim: int, qk_rope_head_dim: int, v_head_dim: int, rope_theta: float = 10000.0):
        super().__init__()
        self.h, self.nope, self.rope, self.dv, self.c = num_heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, kv_lora_rank
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        B, T, _ = x.shape
        H, nope, rope, dv = self.h, self.nope, self.rope, self.dv
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q[..., :nope], rope_llama(q[..., nope:], self.theta)
        c_kv, k_pe = self.wkv_a(x).split([self.c, rope], -1)
        k_pe = rope_llama(k_pe[:, :, None, :], self.theta).expand(B, T, H, rope)
        k_nope, v = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, nope + dv).split([nope, dv], -1)
        q = torch.cat([q_nope, q_pe], -1).transpose(1, 2).reshape(B * H, T, nope + rope)
        k = torch.cat([k_nope, k_pe], -1).transpose(1, 2).reshape(B * H, T, nope + rope)
        v = v.transpose(1, 2).reshape(B * H, T, dv)
        s = torch.bmm(q, k.transpose(1, 2)).view(B, H, T, T) / math.sqrt(nope + rope)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        o = torch.bmm(s.softmax(-1).view(B * H, T, T), v).view(B, H, T, dv)
        return self.wo(o.transpose(1, 2).reshape(B, T, H * dv))
