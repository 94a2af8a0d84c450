# attnprep: rope
# expect: wrong_output
# diagnosis: rope_theta_ignored + rotate_half_sign_flipped
"""A sympy-like derivation as a step list: `CACHE_STEPS` and `ROPE_STEPS` are lists of (symbol,
lambda env: ...) evaluated in order into an env dict, as one would print each line of a sympy
derivation. Two slips, one per function: the cache's base is the literal 10000 (the theta argument
is never read), and rotate_half returns [x2, -x1]."""

import torch

CACHE_STEPS = [
    ("exponent", lambda e: torch.arange(0, e["D"], 2, dtype=torch.float32, device=e["device"]) / e["D"]),
    ("inv_freq", lambda e: 1.0 / (10000.0 ** e["exponent"])),
    ("t", lambda e: torch.arange(e["T"], dtype=torch.float32, device=e["device"])),
    ("freqs", lambda e: torch.outer(e["t"], e["inv_freq"])),
    ("emb", lambda e: torch.cat([e["freqs"], e["freqs"]], dim=-1)),
]

ROPE_STEPS = [
    ("x1", lambda e: e["x"][..., : e["x"].shape[-1] // 2]),
    ("x2", lambda e: e["x"][..., e["x"].shape[-1] // 2 :]),
    ("rot", lambda e: torch.cat([e["x2"], -e["x1"]], dim=-1)),
    ("out", lambda e: (e["x"] * e["cos"] + e["rot"] * e["sin"]).to(e["x"].dtype)),
]


def evaluate(steps, env):
    for symbol, rule in steps:
        env[symbol] = rule(env)
    return env


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    env = evaluate(CACHE_STEPS, {"T": seq_len, "D": head_dim, "theta": theta, "device": device})
    return env["emb"].cos(), env["emb"].sin()


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    cos, sin = cos[positions], sin[positions]
    if positions.dim() == 2:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return evaluate(ROPE_STEPS, {"x": x, "cos": cos, "sin": sin})["out"]
# bug-line: 13, 22
