"""The emulated device placement (grader/observe.py DeviceTracker) around torch.func transforms.

vmap hands back its result by unwrapping where no torch call is seen; that result, and what is
computed from it, is on the device when what the transform computed was. A tensor made on the
CPU stays there, inside or outside a transform (issue 24, round 8: a correct apply_rope lifted
with vmap and then cast back was failed as "output not on the input's device").
"""

from __future__ import annotations

import torch
from torch.func import vmap

from attnprep.grader.observe import DeviceTracker


def _rotate(x, c, s):
    h = x.shape[-1] // 2
    return x * c + torch.cat([-x[:, h:], x[:, :h]], dim=-1) * s


def test_a_vmap_result_cast_afterwards_stays_on_the_device():
    x, c, s = torch.randn(2, 3, 5, 4), torch.randn(5, 4), torch.randn(5, 4)
    tracker = DeviceTracker([x, c, s], "")
    with torch.no_grad(), tracker:
        out = vmap(vmap(_rotate, in_dims=(0, None, None)), in_dims=(0, None, None))(x, c, s)
        cast = out.to(torch.float32).contiguous() * 2.0
    assert tracker.problem is None
    assert id(cast) in tracker.on_device


def test_a_cpu_tensor_mixed_with_a_vmap_result_is_still_a_mix():
    x, c, s = torch.randn(2, 3, 5, 4), torch.randn(5, 4), torch.randn(5, 4)
    tracker = DeviceTracker([x, c, s], "")
    with torch.no_grad(), tracker:
        out = vmap(_rotate, in_dims=(0, None, None))(x.flatten(0, 1), c, s)
        _ = out + torch.ones(5, 4)  # made without device=: on the CPU
    assert tracker.problem is not None and tracker.problem["func"] in ("add", "__add__")


def test_a_tensor_made_before_the_check_is_not_taken_for_a_transform_result():
    x, c, s = torch.randn(2, 3, 5, 4), torch.randn(5, 4), torch.randn(5, 4)
    table = torch.ones(5, 4)  # a plain attribute set in __init__: the CPU
    tracker = DeviceTracker([x, c, s], "")
    with torch.no_grad(), tracker:
        out = vmap(_rotate, in_dims=(0, None, None))(x.flatten(0, 1), c, s)
        _ = out * table.to(torch.float32)
    assert tracker.problem is not None
