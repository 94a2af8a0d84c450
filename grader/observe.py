"""Watch what an attempt computes: softmax calls, the matmuls around them, built-ins.

A :class:`Observer` is a ``TorchFunctionMode``: every torch function the attempt calls passes
through it, including ``F.softmax``, ``Tensor.softmax``, ``nn.Softmax``, ``@``, ``einsum`` and
``F.scaled_dot_product_attention``. From the calls it keeps what the report needs:

- the scores (the softmax input) and the attention probabilities: the left operand of the
  probabilities @ V product, which also covers a hand-written exp/sum softmax;
- the shapes of q, kᵀ, scores, probabilities and context at the first attention;
- softmax ``dim`` arguments, dropout calls made with ``training=True``;
- ``masked_fill`` results that nothing used (``scores.masked_fill(...)`` on a line of its own);
- use of built-ins that do the attention for you, and of attnprep's own solutions (any frame
  running code from the solutions folder).
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import weakref
from dataclasses import dataclass, field


import torch

from attnprep import exercises
from attnprep.grader.result import REFERENCE_SOLUTION
from attnprep.grader.tensors import tensors_in
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

SOLUTIONS_DIR = str(exercises.SOLUTIONS_DIR.resolve())

_SOFTMAX = {torch.softmax, torch.Tensor.softmax, F.softmax, torch.nn.functional.softmax}
_MATMUL = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm, torch.Tensor.bmm, torch.einsum}
_BUILTINS = {F.scaled_dot_product_attention: "F.scaled_dot_product_attention", F.multi_head_attention_forward: "nn.MultiheadAttention"}
for _name, _label in (("_native_multi_head_attention", "nn.MultiheadAttention"),
                      ("_scaled_dot_product_attention_math", "scaled_dot_product_attention (math)"),
                      ("_scaled_dot_product_flash_attention_for_cpu", "scaled_dot_product_attention (flash, CPU)")):
    if hasattr(torch, _name):
        _BUILTINS[getattr(torch, _name)] = _label
try:  # flex_attention is not in every build
    from torch.nn.attention.flex_attention import flex_attention as _flex

    _BUILTINS[_flex] = "flex_attention"
except Exception:  # pragma: no cover
    pass
# The same built-ins by the aten ops they run (watched with forbidden.ForbiddenOps, below the Python
# API: an attempt that calls them under torch._C.DisableTorchFunction() hides from the Observer,
# not from these). _fused_sdp_choice is how every SDPA call picks its backend.
ATTENTION_OPS = {
    "aten._fused_sdp_choice": "scaled_dot_product_attention",
    "aten._scaled_dot_product_flash_attention_for_cpu": "scaled_dot_product_attention (flash, CPU)",
    "aten._scaled_dot_product_flash_attention": "scaled_dot_product_attention (flash)",
    "aten._scaled_dot_product_efficient_attention": "scaled_dot_product_attention (efficient)",
    "aten._scaled_dot_product_cudnn_attention": "scaled_dot_product_attention (cuDNN)",
    "aten._scaled_dot_product_fused_attention_overrideable": "scaled_dot_product_attention (fused)",
    "aten._safe_softmax": "scaled_dot_product_attention (math)",
    "aten._native_multi_head_attention": "nn.MultiheadAttention",
}
_DROPOUT = {F.dropout, torch.dropout, torch.nn.functional.dropout}
_MASKED_FILL = {torch.masked_fill, torch.Tensor.masked_fill}


@dataclass
class Observation:
    softmax_dims: list = field(default_factory=list)  # the dim argument of each softmax call
    scores: torch.Tensor | None = None  # the first softmax input with trailing (T, S)
    probs: torch.Tensor | None = None  # left operand of the first probs @ V
    shapes: dict = field(default_factory=dict)  # stage -> shape tuple
    builtins: set = field(default_factory=set)
    dropout_in_eval: bool = False
    discarded_fills: int = 0  # masked_fill results freed without any torch function taking them


def forbidden_functions(names) -> dict:
    """The torch functions an exercise forbids (``[grading] forbidden_functions``: dotted names such
    as ``"F.layer_norm"``, ``"torch.rms_norm"`` or ``"torch.ops.aten.native_layer_norm"``, ``F.``
    being ``torch.nn.functional.``), each mapped to the name the report shows: the name itself, or
    its value when the names are a table. Names this torch build does not have are skipped.

    These are recognised by the Python function called (this observer is a TorchFunctionMode), which
    is what tells ``F.rms_norm`` apart: on the CPU it decomposes into the very aten ops (pow, mean,
    rsqrt, mul) a hand-written RMSNorm runs, so no dispatch-level watch can see it."""
    shown = dict(names) if isinstance(names, dict) else {n: n for n in names}
    found = {}
    for name, display in shown.items():
        path = name.replace("F.", "torch.nn.functional.", 1) if name.startswith("F.") else name
        obj = sys.modules.get("torch") if path.split(".")[0] == "torch" else None
        for part in path.split(".")[1:]:
            obj = getattr(obj, part, None)
        if obj is not None and callable(obj):
            found[obj] = display
            overloads = getattr(obj, "overloads", None)  # torch.ops.aten.<op>: its .default … too
            if isinstance(obj, torch._ops.OpOverloadPacket) and callable(overloads):
                found.update({getattr(obj, o): display for o in overloads()})
    return found


class Observer(TorchFunctionMode):
    """Around one run of the attempt: the built-ins it calls and whether attnprep's reference
    solution runs (always), and with ``record`` what the report shows of the observed case (softmax
    dims, the scores and weights, stage shapes, dropout in eval, discarded masked_fill results)."""

    def __init__(self, seq_q: int, seq_k: int, training: bool = False, forbidden: dict | None = None,
                 record: bool = True):
        super().__init__()
        self.seq_q, self.seq_k = seq_q, seq_k
        self.training = training
        self.forbidden = forbidden or {}  # an exercise's own built-ins (see forbidden_functions)
        self.record = record
        self.obs = Observation()
        self._fills: dict[int, weakref.ref] = {}  # id -> the masked_fill results not used yet
        self._clean = None  # the caller of the last call, when nothing above it was the reference's
        self._clean_parent = None  # … and the frame that called it (held by the caller's f_back anyway)

    def __enter__(self):
        # the frame that runs the attempt under this mode: no reference solution runs below it, so
        # the walk up the stack stops there (not at the bottom of however deep a caller's stack is)
        self.floor = sys._getframe(1)
        return super().__enter__()

    def __exit__(self, *exc):
        self.floor = None
        self._clean = self._clean_parent = None  # first: a finished frame held here would keep its locals (and fills) alive
        self._fills.clear()  # the ones still alive (returned, kept in a list …) are not counted
        return super().__exit__(*exc)

    def _from_solutions(self, caller) -> bool:
        """Whether attnprep's reference solution is on the stack of a call made from ``caller``.
        The same caller as the last clean call (a loop's body calling torch again and again) has
        the same stack above it: the walk is done once per frame, not once per call."""
        if caller is self._clean:
            return False
        parent = caller.f_back
        if parent is not None and parent is self._clean_parent and not caller.f_code.co_filename.startswith(SOLUTIONS_DIR):
            # a new frame called from the last clean caller's caller (another mode's handler, torch's
            # own Python wrapper of an op, a helper called in a loop): above it, the stack walked already
            self._clean = caller
            return False
        found = _called_from_solutions(caller, getattr(self, "floor", None))
        self._clean = None if found else caller
        self._clean_parent = None if found else parent
        return found

    def _watch_fill(self, out) -> None:
        """Count ``out`` (a masked_fill result) as discarded if it is freed before any torch function
        takes it as an argument (see :meth:`_used`)."""
        key = id(out)
        fills, obs = self._fills, self.obs

        def freed(ref, key=key):
            if fills.get(key) is ref:
                del fills[key]
                obs.discarded_fills += 1

        fills[key] = weakref.ref(out, freed)

    def _used(self, args, kwargs) -> None:
        for a in (*args, *kwargs.values()):
            if isinstance(a, torch.Tensor):
                ref = self._fills.get(id(a))
                if ref is not None and ref() is a:
                    del self._fills[id(a)]
            elif isinstance(a, (list, tuple)):
                self._used(a, {})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _BUILTINS:
            self.obs.builtins.add(_BUILTINS[func])
        elif func in self.forbidden:
            self.obs.builtins.add(self.forbidden[func])
        if self._from_solutions(sys._getframe(1)):
            self.obs.builtins.add(str(REFERENCE_SOLUTION))
        out = func(*args, **kwargs)
        if not self.record:
            return out
        try:
            if self._fills:
                self._used(args, kwargs)
            if func in _MASKED_FILL and isinstance(out, torch.Tensor):
                self._watch_fill(out)
            self._record(func, args, kwargs, out)
        except Exception:  # observation must never change what the attempt computes
            pass
        return out

    def _square(self, t) -> bool:
        return isinstance(t, torch.Tensor) and t.dim() >= 2 and tuple(t.shape[-2:]) == (self.seq_q, self.seq_k)

    def _record(self, func, args, kwargs, out) -> None:
        if isinstance(out, torch.Tensor) and torch._C._functorch.is_functorch_wrapped_tensor(out):
            return  # inside torch.func.vmap / grad: a per-sample view that must not leave the transform
        obs = self.obs
        if func in _SOFTMAX:
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
            obs.softmax_dims.append((dim, args[0].dim() if isinstance(args[0], torch.Tensor) else None))
            if obs.scores is None and self._square(args[0]):
                obs.scores = args[0].detach()
                obs.shapes.setdefault("scores", tuple(args[0].shape))
        elif func in _DROPOUT:
            training = kwargs.get("training", args[2] if len(args) > 2 else True)
            p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
            if training and not self.training and p:
                obs.dropout_in_eval = True
        elif func in _MATMUL:
            operands = list(args[1:]) if func is torch.einsum else list(args[:2])
            if func is torch.einsum and len(operands) == 1 and isinstance(operands[0], (list, tuple)):
                operands = list(operands[0])
            if len(operands) != 2 or not all(isinstance(o, torch.Tensor) for o in operands):
                return
            a, b = operands
            if self._square(out) and "scores" not in obs.shapes:  # q @ k^T
                obs.shapes["q"] = tuple(a.shape)
                obs.shapes["k^T"] = tuple(b.shape)
                obs.shapes["scores"] = tuple(out.shape)
            elif obs.probs is None and (self._square(a) or self._square(b)) and not self._square(out):
                probs = a if self._square(a) else b
                obs.probs = probs.detach()
                obs.shapes["attn"] = tuple(probs.shape)
                obs.shapes["attn @ v"] = tuple(out.shape)


def _called_from_solutions(frame, floor=None) -> bool:
    """Whether a frame from ``frame`` up to ``floor`` runs code of attnprep's solutions folder."""
    while frame is not None and frame is not floor:
        if frame.f_code.co_filename.startswith(SOLUTIONS_DIR):
            return True
        frame = frame.f_back
    return False


# --- device placement without a GPU --------------------------------------------------------------

_NO_MIX = {"__getitem__", "__setitem__", "to", "type_as", "copy_", "__get__", "__set__", "expand_as",
           "view_as", "reshape_as", "size", "dim", "numel", "cuda", "cpu"}
_MOVES = {"to", "cuda", "type_as", "new_tensor", "new_ones", "new_zeros", "new_empty", "new_full"}


def _property(func) -> str:
    """The name of the tensor property whose ``__get__`` ``func`` is (``x.is_cuda``), or ""."""
    return getattr(getattr(func, "__self__", None), "__name__", "")


def _names_gpu(value) -> bool:
    """Whether ``value``, a device argument, names the GPU an input on ``cuda:0`` is on."""
    if isinstance(value, str):
        return value in ("cuda", "cuda:0")
    return isinstance(value, torch.device) and value.type == "cuda" and value.index in (None, 0)


def _wrapped(t: torch.Tensor) -> bool:
    """A tensor of a torch.func transform (vmap's per-sample view): made from the tensors the
    transform was given, by unwrapping this mode does not see, so its placement is theirs."""
    return torch._C._functorch.is_functorch_wrapped_tensor(t)


def _unwrapped(t: torch.Tensor) -> torch.Tensor:
    """The plain tensor inside a torch.func transform's tensor (through every nested level)."""
    while _wrapped(t):
        t = torch._C._functorch.get_unwrapped(t)
    return t


ATTEMPT_MODULE = "attnprep_attempt"  # the name the attempt's file is loaded under (grader/child.py)
_EMPTY_AT_LOAD: set[str] = set()  # the attempt's module-level dicts that were empty once it was loaded


_KEPT_AT_LOAD: set[tuple[str, str]] = set()  # (function, attribute): dicts a function of the file held at load
_EMPTY_AT_BUILD: list[tuple[torch.nn.Module, set[str]]] = []  # the built module's parts and their empty dicts
_MODULE_OWN = frozenset(vars(torch.nn.Module()))  # nn.Module's own bookkeeping (_parameters, _buffers …)


def loaded(module: dict) -> None:
    """The attempt's module ``module`` (its namespace) was just loaded: note its empty dicts, the
    memo tables :func:`forget_memos` may empty, and the dicts its functions already hold."""
    _EMPTY_AT_LOAD.clear()
    _EMPTY_AT_LOAD.update(name for name, value in module.items() if type(value) is dict and not value)
    _KEPT_AT_LOAD.clear()
    _KEPT_AT_LOAD.update((name, attr) for name, fn in _functions(module) for attr, value in vars(fn).items()
                         if type(value) is dict and value)


def built(module: torch.nn.Module) -> None:
    """The attempt's module was just constructed: note the empty dicts each of its parts holds
    (``self._masks = {}``), the memo tables :func:`forget_memos` may empty."""
    _EMPTY_AT_BUILD.clear()
    for sub in module.modules():
        names = {n for n, v in vars(sub).items() if n not in _MODULE_OWN and type(v) is dict and not v}
        if names:
            _EMPTY_AT_BUILD.append((sub, names))


def _functions(module: dict):
    """(name, function) of the file's own functions, by their module-level names."""
    module_name = module.get("__name__")
    return [(name, fn) for name, fn in module.items()
            if inspect.isfunction(fn) and getattr(fn, "__module__", None) == module_name]


def _memo(value) -> bool:
    return type(value) is dict and any(tensors_in(v) for v in value.values())


def forget_memos(module: dict) -> None:
    """Empty what the attempt memoised while the graded cases ran, before a run whose devices are
    watched (:class:`DeviceTracker`): a mask kept by ``functools.lru_cache`` / ``functools.cache``
    (a function of the file or of one of its classes) or in a module-level dict that was empty when
    the file was loaded, made there with the device it was asked for. Made before the watch, those
    tensors would read as made on the CPU; on a GPU the first call makes them on the device. So are
    a dict of tensors a function of the file keeps as its attribute (made after the load) and a dict
    of tensors of the attempt's module that was empty once it was built. A memo is transparent by its
    nature: emptying it changes no output."""
    def clear(value) -> None:
        value = getattr(value, "__func__", value)  # staticmethod / classmethod
        if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info"):
            value.cache_clear()

    module_name = module.get("__name__")
    for name, value in list(module.items()):
        if isinstance(value, type) and value.__module__ == module_name:
            for member in list(vars(value).values()):
                clear(member)
        else:
            clear(value)
        if name in _EMPTY_AT_LOAD and type(value) is dict and any(isinstance(v, torch.Tensor) for v in value.values()):
            value.clear()
    # a memo kept as a function's attribute (``causal_mask._cache``), made after the file was loaded
    for name, fn in _functions(module):
        for attr, value in vars(fn).items():
            if (name, attr) not in _KEPT_AT_LOAD and _memo(value):
                value.clear()
    # a memo of the module, empty once it was built (``self._masks = {}``, filled by forward)
    for sub, names in _EMPTY_AT_BUILD:
        for attr in names:
            if _memo(vars(sub).get(attr)):
                vars(sub)[attr].clear()


_CPU = sys.intern("cpu")  # the "cpu" every string constant of that text is (code constants are interned)


class DeviceTracker(TorchFunctionMode):
    """Emulate a second device on the CPU: which tensors would live on the input's device?

    The inputs, parameters and buffers are on "the device"; so is everything computed from them,
    everything created with an explicit ``device=`` and everything moved with ``.to(x)`` /
    ``.to(device)``. Anything else (``torch.ones(T, T)``, a plain tensor attribute set in
    ``__init__``) stays on the CPU. An op that mixes the two with a tensor of one or more dims is
    exactly what raises "Expected all tensors to be on the same device" on a GPU. (Running on the
    `meta` device shows the same, but its first use imports torch._dynamo: seconds.)
    """

    def __init__(self, device_tensors, attempt_file: str, devices=()):
        super().__init__()
        self.keep = list(device_tensors) + list(devices)
        self.on_device = {id(t) for t in device_tensors}
        self.devices = {id(d) for d in devices}  # torch.device objects read from "the device"
        self.attempt_file = attempt_file
        self.origin: dict[int, tuple[int, str] | None] = {}  # CPU-only tensor -> where the attempt made it
        self.problem: dict | None = None  # the first mix: func, where_line/code, origin_line/code
        self.depth = 0  # > 0 while a torch call seen here runs
        # storages of the values inside a torch.func transform's tensors on the device: what the
        # transform hands back (vmap's result) is a view of one of them, made where no call is seen
        self.transform_storages: set[int] = set()
        # "cuda" / torch.device("cuda"), as an attempt names the GPU it reads from x.device or
        # x.is_cuda, is the device: it runs as this stand-in (the CPU, noted as the device) so that
        # no CUDA call is made
        self.gpu = torch.device("cpu")
        # what x.device reads for a tensor on the device, as on a GPU machine: cuda:0 (so that
        # `if t.device != x.device: t = t.to(x.device)` moves a CPU tensor here as it does there)
        self.cuda = torch.device("cuda", 0)
        self.devices.update((id(self.gpu), id(self.cuda)))
        self.keep += [self.gpu, self.cuda]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if isinstance(func, torch._ops.OpOverload):
            return self._aten(func, args, kwargs)
        name = getattr(func, "__name__", "")
        if name == "__get__" and _property(func) in ("is_cuda", "is_cpu") and args and self._on_device(args[0]):
            return _property(func) == "is_cuda"  # the input's device is a GPU: x.is_cuda, not x.is_cpu
        if name == "cuda" and args and isinstance(args[0], torch.Tensor):
            func, args, kwargs = torch.Tensor.to, (args[0], self.gpu), {}  # t.cuda(): to the GPU, the device
        if func is torch.device:  # torch.device(str(x.device)), torch.device(x.device.type): the input's
            made = func(*args, **kwargs)
            given = [*args, *kwargs.values()]
            if given and self._is_device(given[0]):
                self.devices.add(id(made))
                self.keep.append(made)
            return made
        args, kwargs = self._gpu_named(args, kwargs)
        tensors = tensors_in((args, kwargs))
        if self.transform_storages:
            self._adopt_transform_results(tensors)
        on_device, stray = [], []
        for t in tensors:  # each tensor looked up once: this runs for every torch call of the device run
            if self._on_device(t):
                on_device.append(t)
            elif t.dim() > 0:
                stray.append(t)
        if on_device and stray and name not in _NO_MIX and self.problem is None:
            origin = next((self.origin[id(t)] for t in stray if self.origin.get(id(t))), None)
            where = self._where()
            self.problem = {"func": name, "where_line": where[0] if where else 0, "where_code": where[1] if where else "",
                            "origin_line": origin[0] if origin else 0, "origin_code": origin[1] if origin else ""}
        self.depth += 1
        try:
            out = func(*args, **kwargs)
        finally:
            self.depth -= 1
        if name == "__get__" and isinstance(out, torch.device) and on_device:  # x.device, weight.device
            return self.cuda
        # An explicit device is the input's only when it was read from a tensor on it (x.device):
        # device="cpu" or a device captured in __init__ is the CPU, as on a GPU machine.
        explicit = self._is_device(kwargs.get("device"))
        target = any(self._is_device(a) for a in args[1:])
        moved = name in _MOVES and (explicit or target or len(on_device) > 0)
        if on_device and name not in ("to", "cpu") or explicit or moved:
            for t in tensors_in(out):
                self.on_device.add(id(t))
                self.keep.append(t)
                if _wrapped(t):
                    value = _unwrapped(t)
                    self.transform_storages.add(value.untyped_storage().data_ptr())
                    self.keep.append(value)
        else:
            where = self._where()
            for t in tensors_in(out):
                self.origin.setdefault(id(t), self.origin.get(id(stray[0]), where) if stray else where)
                self.keep.append(t)
        return out

    def __enter__(self):
        module = sys.modules.get(ATTEMPT_MODULE)
        if module is not None:
            try:
                forget_memos(vars(module))
            except Exception:  # noqa: BLE001 — an odd object of the file: its memos stay, as before
                pass
        return super().__enter__()

    def _on_device(self, t) -> bool:
        return isinstance(t, torch.Tensor) and (id(t) in self.on_device or _wrapped(t))

    def _gpu_named(self, args, kwargs, first: int = 1):
        """``args, kwargs`` with a device that names the GPU (``"cuda"``, ``"cuda:0"``,
        ``torch.device("cuda")``: read from ``x.device``, ``str(x.device)``, ``x.device.type`` or
        chosen by ``x.is_cuda`` for a tensor on the device) replaced by the stand-in :attr:`gpu`,
        from positional argument ``first`` on. On a GPU the input is on ``cuda:0``; here the CPU
        run of the attempt would have raised on such a name, so only the device run meets it."""
        if "device" in kwargs and _names_gpu(kwargs["device"]):
            kwargs = {**kwargs, "device": self.gpu}
        if any(_names_gpu(a) for a in args[first:]):
            args = (*args[:first], *(self.gpu if _names_gpu(a) else a for a in args[first:]))
        return args, kwargs

    def _is_device(self, value) -> bool:
        """Is ``value`` (a ``device=`` or ``.to()`` argument) the input's device? A torch.device
        read from a tensor on it or built from one, or a "cpu" made at run time: the input's device
        as a string kept from an earlier call (``self.dev = str(x.device)``; on a GPU "cuda:0"),
        which a string written in the file is not: its "cpu" is the interned constant of the code,
        a string made at run time never is. (Names of the GPU, which ``x.device`` now reads, are
        :meth:`_gpu_named`'s.)"""
        if id(value) in self.devices:
            return True
        return type(value) is str and value == "cpu" and value is not _CPU

    def opaque(self, fn):
        """``fn`` (a TorchScript function: its ops run where this mode sees none) wrapped so that
        what it returns is on the device when it was given a tensor on the device, or no tensor at
        all: the benefit of the doubt :meth:`_aten` gives, since its reads of ``x.device`` are not
        seen either."""
        def call(*args, **kwargs):
            args, kwargs = self._gpu_named(args, kwargs, first=0)
            out = fn(*args, **kwargs)
            given = tensors_in((args, kwargs))
            if not given or any(id(t) in self.on_device for t in given):
                for t in tensors_in(out):
                    self.on_device.add(id(t))
                    self.keep.append(t)
            return out

        return call

    def seen(self, fn):
        """``fn`` as this tracker can follow it: a TorchScript function through :meth:`opaque`, any
        other as it is (a mask or cache function the kind calls itself)."""
        return self.opaque(fn) if isinstance(fn, torch.jit.ScriptFunction) else fn

    @contextlib.contextmanager
    def scripted_opaque(self, owner=None):
        """While it lasts, the attempt file's TorchScript functions (``@torch.jit.script`` helpers,
        looked up by their module-level names) are called through :meth:`opaque`: a mask helper
        scripted with a ``device`` argument makes its tensor where no call is seen. So are the
        scripted submodules of ``owner`` (the attempt's module: ``self.core = torch.jit.script(Core())``),
        whose ``forward`` runs in TorchScript too, scripted modules the file keeps by name, and
        TorchScript functions the owner's modules keep as attributes (a ``torch.jit.trace``'d helper)
        or their classes of the file keep (``act = staticmethod(scripted)``)."""
        module = vars(sys.modules[ATTEMPT_MODULE]) if ATTEMPT_MODULE in sys.modules else {}
        scripted = {name: fn for name, fn in module.items() if isinstance(fn, torch.jit.ScriptFunction)}
        module.update({name: self.seen(fn) for name, fn in scripted.items()})  # the file's own names, this run only
        subs = [m for m in module.values() if isinstance(m, torch.jit.ScriptModule)]
        if isinstance(owner, torch.nn.Module):
            subs += [m for m in owner.modules() if isinstance(m, torch.jit.ScriptModule)]
        # its forward through opaque: an instance attribute over the class's (TorchScript may have
        # cached its ScriptMethod there already: put back as it was)
        wrapped = [(sub, sub.__dict__.get("forward")) for sub in dict.fromkeys(subs)]
        for sub, _ in wrapped:
            sub.__dict__["forward"] = self.opaque(sub.forward)
        # TorchScript functions kept as attributes of the owner's modules (``self.core =
        # torch.jit.trace(core, example)`` or ``torch.jit.script(fn)``), or of their classes written
        # in the attempt's file (``act = staticmethod(scripted_fn)``): through opaque too
        kept, in_classes = [], []
        if isinstance(owner, torch.nn.Module):
            kept = [(m, name, fn) for m in owner.modules() for name, fn in list(vars(m).items())
                    if isinstance(fn, torch.jit.ScriptFunction)]
            classes = {c for m in owner.modules() for c in type(m).__mro__ if c.__module__ == ATTEMPT_MODULE}
            for cls in classes:
                for name, value in list(vars(cls).items()):
                    fn = value.__func__ if isinstance(value, staticmethod) else value
                    if isinstance(fn, torch.jit.ScriptFunction):
                        in_classes.append((cls, name, value))
        for m, name, fn in kept:
            m.__dict__[name] = self.opaque(fn)
        for cls, name, value in in_classes:
            wrapped_fn = self.opaque(value.__func__ if isinstance(value, staticmethod) else value)
            setattr(cls, name, staticmethod(wrapped_fn))  # called as self.<name>(...): no self either way
        try:
            yield
        finally:
            for m, name, fn in kept:
                m.__dict__[name] = fn
            for cls, name, value in in_classes:
                setattr(cls, name, value)
            module.update(scripted)
            for sub, before in wrapped:
                if before is None:
                    sub.__dict__.pop("forward", None)
                else:
                    sub.__dict__["forward"] = before

    def _adopt_transform_results(self, tensors) -> None:
        """A tensor never seen made that views the value of a transform's tensor on the device is
        the transform's result (vmap unwraps it where this mode does not see): on the device too."""
        for t in tensors:
            if id(t) not in self.on_device and id(t) not in self.origin and not _wrapped(t):
                try:
                    shared = t.untyped_storage().data_ptr() in self.transform_storages
                except (RuntimeError, NotImplementedError):  # a tensor without storage
                    shared = False
                if shared:
                    self.on_device.add(id(t))
                    self.keep.append(t)

    def _aten(self, func, args, kwargs):
        """An aten op, as a dispatch mode re-dispatches it. Inside a torch call seen above it is
        that call again (its caller decides). Alone it ran where no Python torch call is seen: a
        TorchScript function (torch.jit.script), whose reads of ``x.device`` are not seen either,
        so a tensor it creates gets the benefit of the doubt: it is on the device, and no mix is
        reported there (a wrong name is worse than none)."""
        out = func(*args, **kwargs)
        if self.depth:
            return out
        tensors = tensors_in((args, kwargs))
        if not tensors or any(id(t) in self.on_device for t in tensors):
            for t in tensors_in(out):
                self.on_device.add(id(t))
                self.keep.append(t)
        return out

    def _where(self) -> tuple[int, str] | None:
        """(line number, code) of the innermost frame in the attempt's file, or None."""
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.attempt_file:
                import linecache

                return frame.f_lineno, linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            frame = frame.f_back
        return None


# --- what ran, as the autograd graph records it ----------------------------------------------------


def graph_nodes(outputs) -> list[str]:
    """The class names of every node of the autograd graph behind ``outputs``
    (``ScaledDotProductFlashAttentionForCpuBackward0``, ``SoftmaxBackward0`` …): what ran, at the
    aten level, whichever Python name called it (``torch.ops.aten.*``, a private kernel). Cheap: a
    walk of the graph the backward pass needs anyway (a TorchDispatchMode would cost the first
    import of torch._dynamo, about a second)."""
    seen, names = set(), set()
    todo = [o.grad_fn for o in outputs if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    while todo and len(seen) < 20_000:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.add(type(node).__name__)
        todo.extend(f for f, _ in node.next_functions)
    return sorted(names)
