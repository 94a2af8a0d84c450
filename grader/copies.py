"""A deep copy of an attempt's module that also copies the functions closing over it.

``copy.deepcopy`` copies a bound method by binding it to the copy, but keeps a plain function as it
is: a lambda stored on the module (a forward hook ``lambda m, args, out: out + self.lora_B(...)``, a
table of step lambdas reading ``self``) still calls the *original* module's layers. The grader's
low-precision copy then mixes a bfloat16 copy with the float32 original and raises, on a correct
attempt. Here such functions, wherever the copy stores them (attributes, hook tables, containers
of them), are rebuilt with their closure cells pointing at the copies, as deepcopy does for bound
methods.
"""

from __future__ import annotations

import copy
import types

_DEPTH = 3  # containers inside containers inside the module's attributes


def module_copy(module):
    """``copy.deepcopy(module)`` with the closures over the original re-pointed at the copy."""
    memo: dict[int, object] = {}
    twin = copy.deepcopy(module, memo)
    if not memo:
        return twin
    for sub in twin.modules() if hasattr(twin, "modules") else [twin]:
        _rebind_in(vars(sub), memo, _DEPTH)
    return twin


def _rebind_in(store, memo: dict, depth: int) -> None:
    items = list(store.items()) if isinstance(store, dict) else list(enumerate(store)) if isinstance(store, list) else []
    for key, value in items:
        if isinstance(value, types.FunctionType) and value.__closure__:
            store[key] = _rebound(value, memo)
        elif depth > 0 and isinstance(value, (dict, list)):
            _rebind_in(value, memo, depth - 1)


def _rebound(fn: types.FunctionType, memo: dict) -> types.FunctionType:
    """``fn`` with each closure cell holding the copy of what it held, when the deep copy made one."""
    cells = []
    for cell in fn.__closure__:
        try:
            held = cell.cell_contents
        except ValueError:  # an empty cell
            cells.append(cell)
            continue
        cells.append(types.CellType(memo.get(id(held), held)))
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, tuple(cells))
    twin.__kwdefaults__ = fn.__kwdefaults__
    twin.__dict__.update(fn.__dict__)
    return twin
