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


def _mixed(body: str) -> dict | None:
    """What the tracker says of ``body`` run on an input on the device (``x``), under it."""
    tracker = DeviceTracker([x := torch.ones(3, 3)], "attempt.py")
    with tracker:
        exec(body, {"torch": torch, "x": x, "device": x.device})
    return tracker.problem


def test_a_device_string_made_at_run_time_is_the_inputs_device_and_a_written_one_is_the_cpu():
    assert _mixed("m = torch.ones(3, 3, device=str(x.device)); y = x + m") is None
    assert _mixed("m = torch.ones(3, 3, device=x.device.type); y = x + m") is None
    assert _mixed("m = torch.ones(3, 3).to(f'{device}'); y = x + m") is None
    assert _mixed("m = torch.ones(3, 3, device='cpu'); y = x + m") is not None  # cpu on every machine
    assert _mixed("m = torch.ones(3, 3).to('cpu'); y = x + m") is not None


def test_memos_are_emptied_when_the_watch_starts_and_a_tensor_kept_elsewhere_is_not():
    import functools
    import sys
    import types

    from attnprep.grader import observe

    module = types.ModuleType(observe.ATTEMPT_MODULE)
    exec("import functools, torch\nTABLE = {}\nKEPT = {}\n"
         "@functools.lru_cache\ndef tri(n, device=None):\n    return torch.ones(n, n, device=device).tril()\n"
         "class Masks:\n    @staticmethod\n    @functools.cache\n    def band(n):\n        return torch.ones(n, n)\n", vars(module))
    observe.loaded(vars(module))
    module.KEPT["not a memo"] = 1  # empty at load too, but holds no tensor: not a memo of masks, kept
    module.TABLE[3] = module.tri(3)
    module.Masks.band(3)
    sys.modules[observe.ATTEMPT_MODULE] = module
    try:
        with DeviceTracker([torch.ones(1)], "attempt.py"):
            pass
    finally:
        sys.modules.pop(observe.ATTEMPT_MODULE, None)
    assert module.tri.cache_info().currsize == 0 and module.Masks.band.cache_info().currsize == 0
    assert module.TABLE == {} and module.KEPT == {"not a memo": 1}


def test_a_device_built_from_the_inputs_device_is_the_inputs_device():
    """``torch.device(str(x.device))`` (a type's call, which no torch function mode sees) is the
    input's device; ``torch.device("cpu")`` written in the file is the CPU; ``torch.device`` is
    itself again once the watch ends, and stays the type to ``isinstance`` while it runs."""
    assert _mixed("m = torch.ones(3, 3, device=torch.device(str(x.device))); y = x + m") is None
    assert _mixed("m = torch.zeros(3, 3).to(torch.device(x.device)); y = x + m") is None
    assert _mixed("d = torch.device(device=x.device.type)\nm = torch.ones(3, 3, device=d); y = x + m") is None
    assert _mixed("assert isinstance(x.device, torch.device) and isinstance(torch.device('cpu'), torch.device)") is None
    assert _mixed("m = torch.ones(3, 3, device=torch.device('cpu')); y = x + m") is not None
    assert torch.device is torch._C.device
