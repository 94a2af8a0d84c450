"""The reference's cache of a prefill, computed by the grader itself for the process that runs the attempt.

A ``given`` call of a cached module's script (:mod:`.kinds.cached_module`) starts from the reference's
cache of tokens the attempt never saw. The attempt runs in a process that never holds the reference
solutions (README, "How far the isolation goes"), so that cache is made here, from the seeded
weights, by the grader's own code: what an edit of the reference cannot give. The mistaken variants
are edits of the reference (``[grading] edits``); this is only the cache a prefill with no mistake
returns, named by ``[grading] prefill``:

- :func:`grouped`: (k, v) of ``num_kv_heads`` heads, (B, G, T, D) each, as grouped-query attention;
- :func:`latent`: DeepSeek's absorbed MLA cache, kv_norm(c_kv) (B, T, c) and the rotated k_pe (B, T, rope).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _linear(weights: dict, role: str, x: torch.Tensor) -> torch.Tensor:
    w = weights[role]
    return F.linear(x, w["weight"], w.get("bias"))


def _rms(weights: dict, role: str, x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm with the gain of ``role``, in float32 (DeepSeek's)."""
    y = x.float()
    y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps)
    return (y * weights[role]["weight"].float()).to(x.dtype)


def _rope(x: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotate x (B, T, *, r) by position 0 .. T-1, DeepSeek's adjacent pairs, in float32."""
    T, r = x.shape[1], x.shape[-1]
    freqs = theta ** (-torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)  # (r/2,)
    angles = torch.outer(torch.arange(T, dtype=torch.float32, device=x.device), freqs)  # (T, r/2)
    shape = (1, T) + (1,) * (x.dim() - 3) + (r // 2,)
    cos, sin = angles.cos().view(shape), angles.sin().view(shape)
    xf = x.float()
    x1, x2 = xf[..., 0::2], xf[..., 1::2]
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., r/2, 2)
    return out.flatten(-2).to(x.dtype)


def grouped(config: dict, weights: dict, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The (k, v) cache of the tokens x (B, T, d_model)."""
    B, T, C = x.shape
    G, D = config["num_kv_heads"], C // config["num_heads"]
    k = _linear(weights, "k_proj", x).view(B, T, G, D).transpose(1, 2)  # (B, G, T, D)
    v = _linear(weights, "v_proj", x).view(B, T, G, D).transpose(1, 2)
    return k, v


def latent(config: dict, weights: dict, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The (c_kv, k_pe) cache of the tokens x (B, T, d_model): the latents after kv_norm (eps 1e-6,
    DeepSeek's), the shared RoPE keys rotated at positions 0 .. T-1."""
    c, r = config["kv_lora_rank"], config["qk_rope_head_dim"]
    c_kv, k_pe = _linear(weights, "wkv_a", x).split([c, r], dim=-1)  # (B, T, c), (B, T, r)
    k_pe = _rope(k_pe.unsqueeze(2), config.get("rope_theta", 10000.0)).squeeze(2)  # (B, T, r)
    return _rms(weights, "kv_norm", c_kv), k_pe


PREFILLS = {"grouped": grouped, "latent": latent}  # exercise.toml [grading] prefill = …
