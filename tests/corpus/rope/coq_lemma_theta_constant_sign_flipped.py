# attnprep: rope
# expect: wrong_output
# diagnosis: rope_theta_ignored + rotate_half_sign_flipped
"""Proof-assistant habits (Coq / Lean): each helper carries a Lemma / Proof sketch in its docstring
and a Definition-like constant; rope_cache used the BASE constant instead of its theta argument,
and rotate_half negated the first half instead of the second."""
import torch

BASE = 10000.0  # Definition base := 10000.


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    """Lemma angle_mono: for i < j, angle(t, i) >= angle(t, j).
    Proof. theta > 1, so theta^(-2i/D) decreases in i. Qed."""
    exps = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim
    inv_freq = BASE ** (-exps)
    t = torch.arange(seq_len, dtype=torch.float32, device=device)
    ang = torch.einsum("t,f->tf", t, inv_freq)
    emb = torch.cat((ang, ang), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    """Lemma rotate_twice: rotate_half (rotate_half x) = -x.
    Proof. [x1; x2] -> [-x2; x1] -> [-x1; -x2]. Qed."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x2, -x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    """Lemma relative: <R_m q, R_n k> depends on m - n only.
    Proof. R_m^T R_n = R_(n - m), rotations of the same plane commute. Qed."""
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c, s = cos[positions], sin[positions]
    if positions.dim() == 2:
        c, s = c[:, None], s[:, None]
    return (x * c + rotate_half(x) * s).to(x.dtype)
# bug-line: 16, 27
