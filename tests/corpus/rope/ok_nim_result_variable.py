# attnprep: rope
# expect: passed
"""A Nim programmer's habits: every function assigns the implicit `result` variable and falls off
the end returning it, `proc`-like helpers with the types in comments, `..<` ranges as arange, and
`let` / `var` comments for immutables and mutables."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    # proc ropeCache(seqLen, headDim: int, theta = 10000.0): (Tensor, Tensor)
    result = None
    let_even = torch.arange(0, head_dim, 2, device=device, dtype=torch.float32)  # 0 ..< headDim by 2
    let_inv = 1.0 / (theta ** (let_even / head_dim))
    let_t = torch.arange(seq_len, device=device, dtype=torch.float32)  # 0 ..< seqLen
    var_freqs = torch.einsum("t,f->tf", let_t, let_inv)
    var_emb = torch.cat([var_freqs, var_freqs], dim=-1)
    result = (torch.cos(var_emb), torch.sin(var_emb))
    return result


def rotateHalf(x):
    # proc rotateHalf(x: Tensor): Tensor
    result = None
    let_half = x.size(-1) // 2
    result = torch.cat([x[..., let_half:].neg(), x[..., :let_half]], dim=-1)
    return result


def apply_rope(x, cos, sin, positions=None):
    # proc applyRope(x, cos, sin: Tensor, positions: Option[Tensor]): Tensor
    result = None
    var_pos = positions if positions is not None else torch.arange(x.size(-2), device=x.device)
    var_cos = cos.index_select(0, var_pos.reshape(-1)).reshape(*var_pos.shape, cos.size(-1))
    var_sin = sin.index_select(0, var_pos.reshape(-1)).reshape(*var_pos.shape, sin.size(-1))
    if var_pos.dim() == 2:
        var_cos = var_cos.unsqueeze(1)
        var_sin = var_sin.unsqueeze(1)
    let_xf = x.to(torch.float32)
    result = (let_xf * var_cos + rotateHalf(let_xf) * var_sin).to(x.dtype)
    return result
