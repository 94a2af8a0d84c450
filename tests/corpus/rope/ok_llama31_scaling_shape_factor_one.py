# attnprep: rope
# expect: passed
"""Llama-3.1's rope_scaling code shape (`_compute_llama3_parameters`: wavelengths, low / high
frequency factors, the smoothed band between them) with factor = 1.0, so every frequency comes out
as the plain one; a ROPE_INIT_FUNCTIONS-like table picks it by `rope_type`; attention_scaling kept
as HF returns it (1.0)."""
import math

import torch

ROPE_SCALING = {"rope_type": "llama3", "factor": 1.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}


def _compute_default_parameters(head_dim, theta, device):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / head_dim))
    return inv_freq, 1.0


def _compute_llama3_parameters(head_dim, theta, device):
    inv_freq, attention_factor = _compute_default_parameters(head_dim, theta, device)
    factor = ROPE_SCALING["factor"]
    low_freq_factor = ROPE_SCALING["low_freq_factor"]
    high_freq_factor = ROPE_SCALING["high_freq_factor"]
    old_context_len = ROPE_SCALING["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    inv_freq_llama = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    return inv_freq_llama, attention_factor


ROPE_INIT_FUNCTIONS = {"default": _compute_default_parameters, "llama3": _compute_llama3_parameters}


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq, attention_scaling = ROPE_INIT_FUNCTIONS[ROPE_SCALING["rope_type"]](head_dim, theta, device)
    position_ids = torch.arange(seq_len, device=device, dtype=torch.float)
    freqs = position_ids[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attention_scaling, emb.sin() * attention_scaling


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos, sin = cos[positions], sin[positions]
    if cos.dim() == 3:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (x * cos + rotate_half(x) * sin).to(x.dtype)
