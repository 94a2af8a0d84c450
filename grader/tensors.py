"""Tensors as plain data on the wire between the child and the grading process, and the one
tolerance both sides compare with.

The functions the encoder needs are bound when this module is imported, before any attempt is:
an attempt that monkeypatches ``torch.Tensor.tolist`` or ``torch.allclose`` cannot fake its values.
"""

from __future__ import annotations

import math
from typing import Any

import torch

RTOL, ATOL = 1e-4, 1e-5  # float32 attention of a few dozen terms; real mistakes are far above

_tolist = torch.Tensor.tolist
_allclose = torch.allclose
_isinstance = isinstance
_Tensor = torch.Tensor


def encode_tensor(out: Any) -> dict:
    """``{"type": "Tensor", "shape", "dtype", "device", "values"}`` or ``{"type": <name>}``."""
    if not _isinstance(out, _Tensor):
        return {"type": type(out).__name__}
    data = out.detach()
    return {
        "type": "Tensor",
        "shape": list(data.shape),
        "dtype": str(data.dtype).replace("torch.", ""),
        "device": data.device.type,
        "values": _tolist(data.to("cpu", torch.float64).flatten()) if data.device.type != "meta" else None,
    }


def decode_tensor(encoded: Any) -> torch.Tensor | None:
    """The float64 tensor of an encoded one; None for anything else (a list, a malformed entry)."""
    if not isinstance(encoded, dict) or encoded.get("type") != "Tensor":
        return None
    shape, values = encoded.get("shape"), encoded.get("values")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        return None
    if not isinstance(values, list) or len(values) != math.prod(shape):
        return None
    try:
        return torch.tensor(values, dtype=torch.float64).reshape(shape)
    except (TypeError, ValueError, RuntimeError):
        return None


def matches(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Same shape and close within the grading tolerance (NaN never matches)."""
    return (
        _isinstance(got, _Tensor)
        and got.shape == want.shape
        and bool(_allclose(got.detach().double(), want.detach().double(), rtol=RTOL, atol=ATOL))
    )
