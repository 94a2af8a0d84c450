"""What the forked child does: import the attempt, build it per config, run every case.

Everything returned is plain data (lists of floats, strings); the parent recomputes the
reference and judges. The child only decides which same-shaped layer plays which role, and a
wrong decision can only make an attempt fail, never pass.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path

import torch

from attnprep.grader.drivers import ContractError
from attnprep.grader.observe import SOLUTIONS_DIR, DeviceTracker, Observer

# Saved before the attempt is imported: an attempt may monkeypatch torch to fake agreement.
_tolist = torch.Tensor.tolist
_allclose = torch.allclose
_isinstance = isinstance
EVAL_SEED = 999


class Guard:
    """An audit hook that notices the attempt opening attnprep's reference solutions."""

    def __init__(self):
        self.armed_now = False
        self.opened: list[str] = []
        sys.addaudithook(self._hook)

    def _hook(self, event, args):
        if self.armed_now and event == "open" and args and _isinstance(args[0], (str, bytes)):
            path = os.fsdecode(args[0])
            if os.path.abspath(path).startswith(SOLUTIONS_DIR):
                self.opened.append(os.path.basename(path))

    @contextmanager
    def armed(self):
        self.armed_now = True
        try:
            yield
        finally:
            self.armed_now = False


def _matches(got, want) -> bool:
    return (
        _isinstance(got, torch.Tensor)
        and got.shape == want.shape
        and bool(_allclose(got.detach().double(), want.detach().double(), rtol=1e-4, atol=1e-5))
    )


def describe(exc: BaseException, path: Path, stage: str) -> dict:
    """One line and the user's own frames of an exception raised by the attempt."""
    name = type(exc).__name__
    if isinstance(exc, SystemExit):
        return {"kind": "exit", "message": f"the attempt called sys.exit({exc.code!r}) during {stage}", "traceback": ""}
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == str(path)]
    where = f" ({path.name}, line {frames[-1].lineno}, in {frames[-1].name})" if frames else ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    kind = "exception"
    if isinstance(exc, MemoryError) or "can't allocate memory" in text or "not enough memory" in text:
        kind = "memory"
        text = text or "out of memory"
    message = f"{name}: {text}{where}" if text else f"{name}{where}"
    tb = "".join(traceback.format_list(frames)) + f"{name}: {text}\n" if frames else ""
    return {"kind": kind, "message": f"{message} during {stage}", "traceback": tb}


def encode(out, device: str) -> dict:
    if _isinstance(out, tuple) and out:
        out = out[0]
    if not _isinstance(out, torch.Tensor):
        return {"type": type(out).__name__}
    data = out.detach()
    return {
        "type": "Tensor",
        "shape": list(data.shape),
        "dtype": str(data.dtype).replace("torch.", ""),
        "device": data.device.type,
        "values": _tolist(data.to("cpu", torch.float64)) if data.device.type != "meta" else None,
    }


def load(path: Path) -> dict:
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("attnprep_attempt", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["attnprep_attempt"] = module
    spec.loader.exec_module(module)
    return vars(module)


def _solution_objects(obj) -> bool:
    cls = obj if isinstance(obj, type) else type(obj)
    mods = [getattr(c, "__module__", "") or "" for c in getattr(cls, "__mro__", [cls])]
    if isinstance(obj, dict):
        mods = [getattr(f, "__module__", "") or "" for f in obj.values()]
    return any(m.startswith("attnprep.solutions") for m in mods)


def run_attempt(path: Path, driver, device: str) -> dict:
    guard = Guard()
    reply: dict = {"configs": [], "builtins": [], "error": None, "contract": None}
    builtins: set[str] = set()
    torch.manual_seed(0)
    try:
        with guard.armed():
            namespace = load(path)
    except BaseException as exc:
        reply["error"] = describe(exc, path, "import")
        return _finish(reply, builtins, guard)
    for ci in range(len(driver.configs)):
        stage = "__init__"
        try:
            with guard.armed():
                attempt, info = driver.build_attempt(namespace, ci, _matches)
            if _solution_objects(attempt):
                builtins.add("attnprep's reference solution")
            stage = "forward"
            result = _run_config(driver, ci, attempt, device, guard, builtins)
        except ContractError as exc:
            reply["contract"] = str(exc)
            return _finish(reply, builtins, guard)
        except BaseException as exc:
            reply["error"] = describe(exc, path, stage)
            reply["error"]["config"] = driver.describe_config(ci)
            return _finish(reply, builtins, guard)
        result["info"] = info
        reply["configs"].append(result)
        if result.get("error"):
            reply["error"] = result.pop("error")
            return _finish(reply, builtins, guard)
    return _finish(reply, builtins, guard)


def _finish(reply: dict, builtins: set, guard: Guard) -> dict:
    if guard.opened:
        builtins.add("attnprep's reference solution")
    reply["builtins"] = sorted(builtins)
    return reply


def _run_config(driver, ci: int, attempt, device: str, guard: Guard, builtins: set) -> dict:
    call = driver.attempt_call(_to(attempt, device))
    runs, observed, pictures = {}, None, {}
    cases = driver.cases(ci)
    for case in cases:
        _move(case, device)
        T = case.graded.shape[1]
        observer = Observer(T, T)
        torch.manual_seed(EVAL_SEED if case.check == "eval" else 0)
        try:
            with guard.armed(), observer, torch.no_grad():
                out = call(case)
        except BaseException as exc:
            builtins.update(observer.obs.builtins)
            error = describe(exc, Path(sys.modules["attnprep_attempt"].__file__), f"forward ({case.name}; {driver.describe_config(ci)})")
            return {"runs": runs, "error": error}
        builtins.update(observer.obs.builtins)
        runs[case.name] = encode(out, device)
        if case.observe:
            observed = _observed(observer.obs)
        # (the observed case's probabilities already travel in "observed")
        if case.picture and not case.observe and observer.obs.probs is not None:
            pictures[case.name] = _tolist(observer.obs.probs.to("cpu", torch.float64))
    result = {"runs": runs, "observed": observed, "pictures": pictures}
    result["grads"] = _grads(driver, call, attempt, cases, guard)
    extra = getattr(driver, "extra_child", None)
    if extra is not None:
        with guard.armed():
            result["extra"] = extra(attempt)
    if device == "cpu":
        result["device"] = _device(driver, attempt, cases, guard, sys.modules["attnprep_attempt"].__file__)
    return result


def _observed(obs) -> dict:
    def lst(t):
        return None if t is None else _tolist(t.to("cpu", torch.float64))

    return {
        "softmax_dims": [list(d) for d in obs.softmax_dims],
        "shapes": {k: list(v) for k, v in obs.shapes.items()},
        "probs": lst(obs.probs),
        "scores": lst(obs.scores),
        "dropout_in_eval": obs.dropout_in_eval,
    }


def _to(attempt, device):
    if isinstance(attempt, torch.nn.Module) and device != "cpu":
        return attempt.to(device)
    return attempt


def _move(case, device):
    if device != "cpu":
        case.inputs = {k: v.to(device) for k, v in case.inputs.items()}
        if case.attention_mask is not None:
            case.attention_mask = case.attention_mask.to(device)


def _grads(driver, call, attempt, cases, guard) -> dict:
    """Which parameters (or inputs, for functions) receive no gradient from the graded outputs."""
    case = next(c for c in cases if c.observe)
    leaves: dict[str, torch.Tensor] = {}
    if isinstance(attempt, torch.nn.Module):
        attempt.zero_grad(set_to_none=True)
        leaves = dict(attempt.named_parameters())
    else:
        case.inputs = {k: v.detach().clone().requires_grad_(True) for k, v in case.inputs.items()}
        leaves = dict(case.inputs)
    try:
        torch.manual_seed(0)
        with guard.armed():
            out = call(case)
            out = out[0] if isinstance(out, tuple) else out
            mask = case.graded.to(out.device)
            shape = [1] * out.dim()
            shape[0], shape[driver.token_axis] = mask.shape
            weight = mask.reshape(shape).to(out.dtype)
            (out.nan_to_num() * weight).sum().backward()
    except BaseException as exc:
        return {"ok": None, "message": f"{type(exc).__name__}: {str(exc)[:200]}"}
    missing = [n for n, p in leaves.items() if p.grad is None]
    return {"ok": not missing, "missing": missing}


def _device(driver, attempt, cases, guard, attempt_file: str) -> dict:
    """Run the observed case with device placement emulated (see observe.DeviceTracker)."""
    case = next(c for c in cases if c.observe)
    inputs = {k: v.detach().clone() for k, v in case.inputs.items()}
    mask = None if case.attention_mask is None else case.attention_mask.clone()
    owned = list(inputs.values()) + ([mask] if mask is not None else [])
    if isinstance(attempt, torch.nn.Module):
        owned += list(attempt.parameters()) + list(attempt.buffers())
    case.inputs, case.attention_mask = inputs, mask
    tracker = DeviceTracker(owned, attempt_file)
    try:
        with guard.armed(), torch.no_grad(), tracker:
            out = driver.attempt_call(attempt)(case)
    except BaseException as exc:
        return {"ok": None, "message": f"{type(exc).__name__}: {str(exc)[:200]}"}
    if tracker.problem:
        return {"ok": False, "message": tracker.problem}
    out = out[0] if isinstance(out, tuple) else out
    if isinstance(out, torch.Tensor) and id(out) not in tracker.on_device:
        return {"ok": False, "message": "the output is not on the input's device"}
    return {"ok": True, "message": ""}
