# attnprep: flash
# expect: used_builtin
# diagnosis: used_builtin
"""torch's own fused kernel does the work."""

import torch.nn.functional as F


def flash_attention(q, k, v, is_causal=False, block_size=64):
    return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
