"""Multi-head latent attention, absorbed form: DeepSeek-V3's decode path (attn_impl="absorb").

Same parameters as the naive MultiHeadLatentAttention, but keys and values are never materialised.
wkv_b's key half is absorbed into the query (q_nope·W_UK) and its value half is applied after the
weighted sum, so attention reads only the compressed cache: kv_cache = kv_norm(c_kv) and
pe_cache = rope(k_pe), i.e. kv_lora_rank + qk_rope_head_dim numbers per token for all heads.
"""

import torch
import torch.nn.functional as F

from attnprep.solutions.mla import MultiHeadLatentAttention, apply_rotary_emb, precompute_freqs_cis


class AbsorbedMultiHeadLatentAttention(MultiHeadLatentAttention):
    """Same constructor, parameter names and shapes as MultiHeadLatentAttention; same outputs."""

    def kv_cache_elements_per_token(self) -> int:
        """Cached numbers per token per layer: the latent c_kv plus the shared RoPE key."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False
    ) -> torch.Tensor:
        B, T, C = x.shape
        H, nope, rope, dv = self.num_heads, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        freqs_cis = precompute_freqs_cis(rope, T, self.rope_theta, device=x.device)  # (T, rope/2)

        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)  # (B, T, H, nope+rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)  # (B, T, H, nope), (B, T, H, rope)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)  # (B, T, H, rope)

        # the compressed cache, all a decoder keeps per token: c = kv_lora_rank, plus rope
        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, rope], dim=-1)  # (B, T, c), (B, T, rope)
        kv_cache = self.kv_norm(c_kv)  # (B, T, c)
        pe_cache = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)  # (B, T, rope)

        # wkv_b.weight rows are [head 0: nope key rows, dv value rows; head 1: ...]
        wkv_b = self.wkv_b.weight.view(H, nope + dv, self.kv_lora_rank)  # (H, nope+dv, c)
        w_uk, w_uv = wkv_b.split([nope, dv], dim=1)  # (H, nope, c), (H, dv, c)

        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, w_uk)  # (B, T, H, c): W_UK absorbed into q
        scores = (
            torch.einsum("bshc,btc->bhst", q_nope, kv_cache)  # (B, H, T, T)
            + torch.einsum("bshr,btr->bhst", q_pe, pe_cache)  # (B, H, T, T)
        ) * self.softmax_scale
        if attention_mask is not None:  # (B, T), True = real token: padded keys get no attention
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))  # (B, 1, 1, T)
        if is_causal:  # query i sees keys j <= i
            allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))  # (T, T)
            scores = scores.masked_fill(~allowed, float("-inf"))
        attn = F.softmax(scores, dim=-1)  # (B, H, T, T)

        out = torch.einsum("bhst,btc->bshc", attn, kv_cache)  # (B, T, H, c): weighted sum of latents
        out = torch.einsum("bshc,hdc->bshd", out, w_uv)  # (B, T, H, dv): W_UV applied after the sum
        return self.wo(out.flatten(2))  # (B, T, H*dv) -> (B, T, C)
