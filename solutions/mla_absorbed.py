"""Multi-head latent attention, absorbed form, as `attnprep compare` measures it.

The absorbed MLA is the mla_decode reference (solutions/mla_decode.py, DeepSeek-V3's
attn_impl="absorb" path): this class only gives it the (x, attention_mask, is_causal) call of the
other modules, for a causal prefill without padding, so that the compare row and the exercise's
reference are the same code. Same parameters as MultiHeadLatentAttention; it caches
kv_norm(c_kv) and the rotated k_pe, kv_lora_rank + qk_rope_head_dim numbers per token.
"""

import torch

from attnprep.solutions.mla_decode import MLADecode


class AbsorbedMultiHeadLatentAttention(MLADecode):
    """Same constructor, parameter names and shapes as MultiHeadLatentAttention; same causal outputs."""

    def kv_cache_elements_per_token(self) -> int:
        """Cached numbers per token per layer: the latent c_kv plus the shared RoPE key."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False
    ) -> torch.Tensor:
        if attention_mask is not None or not is_causal:
            raise ValueError("the absorbed form is the decode path: a causal prefill without padding only")
        out, _ = super().forward(x)  # the prefill of MLADecode: an empty cache
        return out
