"""Tensors as plain data on the wire between the child and the grading process, and the one
tolerance both sides compare with.

The functions the encoder needs are bound when this module is imported, before any attempt is:
an attempt that monkeypatches ``torch.Tensor.tolist`` or ``torch.allclose`` cannot fake its values.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

import torch

RTOL, ATOL = 1e-4, 1e-5  # float32 attention of a few dozen terms; real mistakes are far above

_tolist = torch.Tensor.tolist
_numpy = torch.Tensor.numpy
_b64encode = base64.b64encode
_allclose = torch.allclose
_isinstance = isinstance
_Tensor = torch.Tensor


def tensors_in(obj: Any, out: list | None = None) -> list[torch.Tensor]:
    """The tensors in ``obj`` and in the lists, tuples and dict values nested in it, in order
    (the arguments of a torch call, what it returned). Asked of every call a mode sees: the
    items of a container are looked at here, only containers in it are recursed into."""
    found = [] if out is None else out
    if _isinstance(obj, _Tensor):
        found.append(obj)
        return found
    if _isinstance(obj, dict):
        obj = obj.values()
    elif not _isinstance(obj, (list, tuple)):
        return found
    for o in obj:
        if _isinstance(o, _Tensor):
            found.append(o)
        elif _isinstance(o, (list, tuple, dict)):
            tensors_in(o, found)
    return found


def pack(t: torch.Tensor) -> str:
    """A tensor's values as text for the wire: the base64 of their float64 bytes, flattened (exact,
    NaN and inf kept; a fraction of the time and size of a JSON list of numbers)."""
    return _b64encode(_numpy(t.detach().to("cpu", torch.float64).contiguous().reshape(-1)).tobytes()).decode("ascii")


def unpack(text: Any, count: int | None = None) -> torch.Tensor | None:
    """The flat float64 tensor :func:`pack` made, or None for anything else (not base64, not a
    whole number of float64s, or not ``count`` of them)."""
    if not isinstance(text, str):
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) % 8 or (count is not None and len(raw) != 8 * count):
        return None
    return torch.frombuffer(bytearray(raw), dtype=torch.float64) if raw else torch.zeros(0, dtype=torch.float64)


def unpack_shaped(shape: tuple[int, ...], text: Any, most: int) -> torch.Tensor | None:
    """:func:`unpack`'s tensor of ``shape`` (sizes a child sent, already checked to be whole numbers
    ≥ 0), or None when it would hold more than ``most`` numbers or ``text`` is not that many."""
    count = 1
    for size in shape:
        count *= size
    if count > most:
        return None
    values = unpack(text, count)
    return None if values is None else values.reshape(shape)


def encode_tensor(out: Any) -> dict:
    """``{"type": "Tensor", "shape", "dtype", "device", "values"}`` (values: :func:`pack`'s text)
    or ``{"type": <name>}``."""
    if not _isinstance(out, _Tensor):
        return {"type": type(out).__name__}
    data = out.detach()
    return {
        "type": "Tensor",
        "shape": list(data.shape),
        "dtype": str(data.dtype).replace("torch.", ""),
        "device": data.device.type,
        "values": pack(data) if data.device.type != "meta" else None,
    }


def decode_tensor(encoded: Any) -> torch.Tensor | None:
    """The float64 tensor of an encoded one (:func:`encode_tensor`); None for anything else (a list
    of numbers, a malformed entry)."""
    if not isinstance(encoded, dict) or encoded.get("type") != "Tensor":
        return None
    shape, values = encoded.get("shape"), encoded.get("values")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        return None
    flat = unpack(values, math.prod(shape))  # None for anything but pack's text
    return None if flat is None else flat.reshape(shape)


def matches(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Same shape and close within the grading tolerance (NaN never matches)."""
    return (
        _isinstance(got, _Tensor)
        and got.shape == want.shape
        and bool(_allclose(got.detach().double(), want.detach().double(), rtol=RTOL, atol=ATOL))
    )
