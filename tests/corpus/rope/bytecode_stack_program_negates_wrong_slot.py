# attnprep: rope
# expect: wrong_output
# diagnosis: rotate_half_sign_flipped
"""An interpreter writer's habits: rotate_half is a tiny stack program (split, swap, neg, cat)
run by a four-opcode interpreter, each op a tuple in a module-level program; the negation was
aimed at the second stack slot (x1) instead of the first (x2 after the swap)."""
import torch

ROTATE_HALF = [
    ("split",),
    ("swap",),
    ("neg", 1),
    ("cat",),
]


def run(program, x):
    stack = [x]
    for op in program:
        if op[0] == "split":
            top = stack.pop()
            half = top.shape[-1] // 2
            stack += [top[..., :half], top[..., half:]]
        elif op[0] == "swap":
            stack[-1], stack[-2] = stack[-2], stack[-1]
        elif op[0] == "neg":
            stack[op[1]] = -stack[op[1]]
        elif op[0] == "cat":
            b, a = stack.pop(), stack.pop()
            stack.append(torch.cat([a, b], dim=-1))
    return stack.pop()


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
    freqs = torch.arange(seq_len, device=device).float()[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos_p, sin_p = cos[positions], sin[positions]
    if positions.dim() == 2:
        cos_p, sin_p = cos_p.unsqueeze(1), sin_p.unsqueeze(1)
    out = x.float() * cos_p + run(ROTATE_HALF, x.float()) * sin_p
    return out.to(x.dtype)
# bug-line: 12
