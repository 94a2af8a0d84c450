# attnprep: flash
# expect: used_builtin
# diagnosis: used_builtin
"""torch's CPU flash kernel called through torch.ops, past any Python-level function hook: the
grader sees the aten op itself."""

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    out, *_ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=is_causal)
    return out
