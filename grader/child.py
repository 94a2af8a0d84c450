"""What the forked child does: import the attempt, build it per config, run every case.

It drives the attempt only through its :class:`~attnprep.grader.kinds.base.Kind` and sends back a
:class:`~attnprep.grader.wire.Reply` of plain data; the grading process computes every reference
output and judges. The reference solutions are never imported here: the one question that needs
the reference (which same-shaped layer plays which role) goes to the grading process through the
channel.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.machinery
import importlib.util
import os
import sys
import traceback
import types
from contextlib import contextmanager
from pathlib import Path

import torch

from attnprep.grader import sandbox
from attnprep.grader.cases import grads_case
from attnprep.grader.kinds.base import ContractError, named_mistakes
from attnprep.grader.forbidden import ForbiddenOps
from attnprep.grader.observe import (ATTEMPT_MODULE, ATTENTION_OPS, SOLUTIONS_DIR, DeviceTracker, Observer, forbidden_functions,
                                     graph_nodes, loaded)
from attnprep.grader.result import REFERENCE_SOLUTION
from attnprep.grader.tensors import _isinstance, _tolist, encode_tensor
from attnprep.grader.wire import ConfigReply, Observed, Probe, Problem, Reply, to_data

EVAL_SEED = 999


def _identities(folder: str) -> frozenset[tuple[int, int]]:
    """(device, inode) of every file under ``folder``: a file is the same whoever names it."""
    found = set()
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                st = os.stat(os.path.join(root, name))
            except OSError:
                continue
            found.add((st.st_dev, st.st_ino))
    return frozenset(found)


def _repository(folder: str) -> list[str]:
    """The git folders of a checkout the solutions are installed from (``pip install -e``): its
    objects hold the solutions too (``git show HEAD:solutions/mha.py``). A worktree's ``.git`` is a
    file naming its folder, which names the shared one."""
    found: list[str] = []
    dot = os.path.join(os.path.dirname(folder), ".git")
    try:
        if os.path.isdir(dot):
            return [dot]
        with open(dot, encoding="utf-8") as f:
            line = f.readline().strip()
        if not line.startswith("gitdir:"):
            return []
        own = os.path.join(os.path.dirname(folder), line.removeprefix("gitdir:").strip())
        found.append(own)
        with open(os.path.join(own, "commondir"), encoding="utf-8") as f:
            found.append(os.path.join(own, f.readline().strip()))
    except (OSError, ValueError):
        pass
    return found


def _only_open(hook):
    """``hook`` as an audit hook called for "open" events only, through a plain function. Every
    audit event of the child calls every hook (``id()``, ``sys._getframe``, reading ``frame.f_code``:
    tens of thousands in a child, most of them the modes' own), and CPython looks each hook's
    ``__cantrace__`` up first: on a bound method that lookup raises and clears an AttributeError at
    every event, about four times what the call of a plain function costs."""
    def audit(event, args):
        if event == "open":
            hook(event, args)

    return audit


class Guard:
    """An audit hook that notices the attempt opening attnprep's reference solutions, by the
    file's identity (its inode, or its real path), not by the string it is named with: a
    ``/proc/self/root/...`` path, a symlink or a hard link to a solution is still that solution."""

    def __init__(self, protect: tuple[str, ...] = ()):
        self.armed_now = False
        self.opened: list[str] = []
        self.folder = os.path.realpath(SOLUTIONS_DIR)
        self.files = _identities(self.folder)
        sys.addaudithook(_only_open(self._hook))
        # and below Python: the solutions cannot be read or rewritten, nor the folders the caller
        # protects written (the user's history: ``protect``), by this process or any program it forks
        # or runs (`python -m attnprep solution`, `cat`)
        self.hidden = sandbox.hide(unreadable=[self.folder, *_repository(self.folder)],
                                   unwritable=[self.folder, *protect])

    def _hook(self, event, args):
        if not (self.armed_now and event == "open" and args):
            return
        target = args[0]
        try:
            if _isinstance(target, int):  # os.open(fd) / fdopen: the descriptor's file
                st = os.fstat(target)
                name = str(target)
            elif _isinstance(target, (str, bytes, os.PathLike)):
                name = os.fsdecode(target)
                if os.path.realpath(name).startswith(self.folder + os.sep):
                    self.opened.append(os.path.basename(name))
                    return
                st = os.stat(name)
            else:
                return
        except (OSError, ValueError, TypeError):
            return
        if (st.st_dev, st.st_ino) in self.files:
            self.opened.append(os.path.basename(name))

    @contextmanager
    def armed(self):
        self.armed_now = True
        try:
            yield
        finally:
            self.armed_now = False


def describe(exc: BaseException, path: Path, stage: str, config: dict | None = None) -> Problem:
    """A :class:`Problem` for an exception the attempt raised: one line and the user's own frames."""
    name = type(exc).__name__
    where = {"stage": stage, "config": ", ".join(f"{k}={v}" for k, v in (config or {}).items())}
    if isinstance(exc, SystemExit):
        return Problem("exit", "error.sys_exit", {"code": repr(exc.code), **where})
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == str(path)]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    kind = "exception"
    if isinstance(exc, MemoryError) or "can't allocate memory" in text or "not enough memory" in text:
        kind = "memory"
        text = text or "out of memory"
    params = {"type": name, "text": text[:500], **where}
    key = "error.raised_no_frame"
    if frames:
        key = "error.raised"
        params.update(file=path.name, line=frames[-1].lineno, function=frames[-1].name)
    missing = _not_installed(exc)
    if missing is not None:  # an import of a package this Python does not have: say how to get it
        key = "error.missing_module" if frames else "error.missing_module_no_frame"
        params.update(package=missing, python=sys.executable or "python")
    tb = "".join(traceback.format_list(frames)) + f"{name}: {text}\n" if frames else ""
    return Problem(kind, key, params, tb, named_mistakes(exc))


# Import names whose package on PyPI is called otherwise (the common ones in ML code).
PIP_NAMES = {"sklearn": "scikit-learn", "cv2": "opencv-python", "PIL": "Pillow", "yaml": "PyYAML",
             "flash_attn": "flash-attn", "xformers": "xformers"}


def _not_installed(exc: BaseException) -> str | None:
    """The pip package of a module the attempt imported that this Python does not have (None: not
    such an error, or a module missing inside an installed package, a typo to fix, not to install)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    try:
        if top in sys.modules or importlib.util.find_spec(top) is not None:
            return None
    except (ImportError, ValueError):
        return None
    return PIP_NAMES.get(top, top)


def reference_modules() -> list[str]:
    """The reference solutions' modules this process has imported (see :func:`_forget_references`):
    each module name the solutions folder's files give, looked up in ``sys.modules``. Reading every
    name in ``sys.modules`` instead (some 1,700 with torch) writes each one's reference count, and
    after a fork each of those pages is a copy-on-write fault: about a thousand, 1.8 ms of the
    grading process's time at every fork (0.3 ms without the faults), 3 ms of a child's."""
    try:
        stamp = os.stat(SOLUTIONS_DIR).st_mtime_ns  # a file added or removed changes the folder's
    except OSError:
        stamp = None
    names = dict.fromkeys(_solution_names(stamp))
    # and what was imported from a file removed since (a module stays imported): the import system
    # hangs each submodule it imports on its package
    names.update(dict.fromkeys(_imported_below(sys.modules.get("attnprep.solutions"), "attnprep.solutions")))
    return [n for n in names if n in sys.modules]


def _imported_below(package, prefix: str) -> list[str]:
    """The names of the submodules the import system attached to ``package`` (named ``prefix``), and
    theirs, below it."""
    found = []
    for key, value in list(vars(package).items()) if package is not None else ():
        if isinstance(value, types.ModuleType) and getattr(value, "__name__", None) == f"{prefix}.{key}":
            found += [value.__name__, *_imported_below(value, value.__name__)]
    return found


@functools.lru_cache(maxsize=1)
def _solution_names(stamp) -> tuple[str, ...]:
    """Every module name under ``attnprep.solutions``: the package, its folders and its files."""
    names = ["attnprep.solutions"]
    for root, folders, files in os.walk(SOLUTIONS_DIR):
        folders[:] = [f for f in folders if f != "__pycache__"]
        inside = os.path.relpath(root, SOLUTIONS_DIR)
        prefix = "attnprep.solutions" + ("" if inside == "." else "." + inside.replace(os.sep, "."))
        names += [f"{prefix}.{f}" for f in sorted(folders)]
        names += [f"{prefix}.{f[:-3]}" for f in sorted(files) if f.endswith(".py") and f != "__init__.py"]
    return tuple(names)


def _forget_references(names: list[str] | None = None) -> None:
    """The grading process may have imported reference solutions (judging an earlier file); the
    fork inherits its modules. Drop them so that the attempt cannot find them by name (importing
    one again opens its file, which the guard sees). ``names``: :func:`reference_modules` of the
    grading process at the fork (else looked up here)."""
    for name in reference_modules() if names is None else names:
        sys.modules.pop(name, None)


class _FromSource(importlib.machinery.SourceFileLoader):
    """The attempt compiled from its source on every load: no ``__pycache__`` read (a file saved again
    within the same second at the same size, ``j > i`` fixed to ``j < i``, would run as it was before:
    the cache checks the source's whole-second mtime and its size) and none written into the
    learner's folder."""

    def get_code(self, fullname):
        return self.source_to_code(self.get_data(self.path), self.path)


def load(path: Path) -> dict:
    """The attempt's namespace, imported. A default dtype its file sets for itself
    (``torch.set_default_dtype(torch.float64)`` at the top, a gradient-checking habit) is put back:
    the grader's inputs and weights are float32 whatever the attempt's file prefers, and its module
    is built and run as a float32 program would build and run it."""
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(ATTEMPT_MODULE, path, loader=_FromSource(ATTEMPT_MODULE, str(path)))
    module = importlib.util.module_from_spec(spec)
    sys.modules[ATTEMPT_MODULE] = module
    default = torch.get_default_dtype()
    try:
        spec.loader.exec_module(module)
    finally:
        torch.set_default_dtype(default)
    loaded(vars(module))
    return vars(module)


def watch_line(where, path: Path, *, delay: float = 1.0, every: float = 0.2) -> None:
    """Keep the line of ``path`` the main thread is running in ``where`` (a shared page the
    grading process reads when it has to stop a check that ran out of time: which line was
    running). A daemon thread that starts sampling after ``delay`` s: a quick check never pays."""
    import struct
    import threading
    import time

    main = threading.main_thread().ident
    wanted = str(path)

    def sample() -> None:
        time.sleep(delay)
        while True:
            frame = sys._current_frames().get(main)
            while frame is not None and frame.f_code.co_filename != wanted:
                frame = frame.f_back
            where[0:8] = struct.pack("<q", frame.f_lineno if frame is not None and frame.f_lineno else 0)
            del frame
            time.sleep(every)

    threading.Thread(target=sample, name="attnprep-line", daemon=True).start()


def run_attempt(path: Path, kind, device: str, channel, where=None, protect: tuple[str, ...] = (),
                forget: list[str] | None = None) -> dict:
    """Grade-side data of the attempt at ``path`` as a plain dict (a :class:`Reply`). ``where``: a
    shared page for :func:`watch_line`; ``protect``: folders the attempt may not write; ``forget``:
    the grading process's :func:`reference_modules`, asked before the fork."""
    if where is not None:
        watch_line(where, path)
    _forget_references(forget)
    guard = Guard(protect)
    reply = Reply()
    builtins: set[str] = set()
    _seed(0, device)
    try:
        with guard.armed():
            namespace = load(path)
    except BaseException as exc:
        reply.problem = describe(exc, path, "import")
        return _finish(reply, builtins, guard, kind)
    for ci in range(len(kind.configs)):
        stage = "__init__"
        try:
            with guard.armed():
                built = kind.build(namespace, ci, channel)
            stage = "forward"
            config = _run_config(kind, ci, built, device, guard, builtins, path)
        except ContractError as exc:
            reply.problem = Problem("contract", exc.key, exc.params)
            return _finish(reply, builtins, guard, kind)
        except BaseException as exc:
            reply.problem = describe(exc, path, stage, kind.config_params(ci))
            reply.problem_config = ci
            return _finish(reply, builtins, guard, kind)
        reply.configs.append(config)
        if isinstance(config, _Failed):
            reply.configs[-1] = config.partial
            reply.problem = config.problem
            reply.problem_config = ci
            return _finish(reply, builtins, guard, kind)
    return _finish(reply, builtins, guard, kind)


def _seed(seed: int, device: str) -> None:
    """Seed the attempt's global generator. On the CPU that is all ``torch.manual_seed`` does now:
    it also queues the seed for each lazy accelerator with a formatted stack trace (milliseconds
    per call in a deep stack)."""
    if device == "cpu":
        torch.random.default_generator.manual_seed(seed)
    else:
        torch.manual_seed(seed)


class _Failed:
    def __init__(self, partial: ConfigReply, problem: Problem):
        self.partial, self.problem = partial, problem


def _finish(reply: Reply, builtins: set, guard: Guard, kind) -> dict:
    builtins.update(kind.seen_builtins)  # what the kind itself watches for (its exercise's forbidden ops)
    if guard.opened:
        builtins.add(str(REFERENCE_SOLUTION))
    reply.builtins = sorted(builtins)
    return to_data(reply)


def _run_config(kind, ci: int, built, device: str, guard: Guard, builtins: set, path: Path):
    attempt = _to(built.attempt, device)
    config = ConfigReply(ci, mapping=built.mapping, by_name=built.by_name,
                         notes=[[n.kind, n.role, n.layer] for n in built.notes], zero_bias=list(built.zero_bias))
    cases = kind.cases(ci)
    forbidden = forbidden_functions(kind.grading.forbidden_functions)
    for case in cases:
        _move(case, device)
        # what the report shows comes from the first config's cases (the observed one, and the
        # attention of every other: the heat-map shows a case that fails); the others are watched
        # for built-ins and the reference only
        observer = Observer(*case.seq, forbidden=forbidden, record=ci == 0)
        _seed(EVAL_SEED if case.check == "eval" else 0, device)
        # the attempt gets copies; a copy that differs afterwards was changed in place
        given = dataclasses.replace(case, inputs={k: v.clone() if isinstance(v, torch.Tensor) else v
                                                  for k, v in case.inputs.items()})
        ran: set[str] = set()
        try:
            with guard.armed(), observer, ForbiddenOps(ATTENTION_OPS, ran), torch.no_grad():
                outputs = kind.run(attempt, given)
            changed = [k for k, v in case.inputs.items() if isinstance(v, torch.Tensor) and not _same(given.inputs[k], v)]
            if changed:
                config.mutated.append([case.name, *changed])
        except BaseException as exc:
            builtins.update(observer.obs.builtins, ran)
            stage = f"forward ({case.name})"
            return _Failed(config, describe(exc, path, stage, kind.config_params(ci)))
        builtins.update(observer.obs.builtins, ran)
        config.runs[case.name] = {name: encode_tensor(value) for name, value in outputs.items()}
        if case.observe and ci == 0:
            config.observed = _observed(observer.obs)
        elif ci == 0 and observer.obs.probs is not None:
            config.pictures[case.name] = encode_tensor(observer.obs.probs)
    if "gradients" in kind.probes:
        config.grads, config.grad_values, config.ops = _grads(kind, attempt, built, cases, guard, path, device,
                                                                     full=ci == 0)
    with guard.armed():
        config.extra = kind.child_extra(attempt)
    if device == "cpu" and "device" in kind.probes:
        config.device = _device(kind, attempt, cases, guard, str(path))
    return config


def _same(now, before) -> bool:
    return now.shape == before.shape and now.dtype == before.dtype and bool(torch.equal(now.nan_to_num(), before.nan_to_num())
                                                                            if now.is_floating_point() else torch.equal(now, before))


def _observed(obs) -> Observed:
    return Observed(
        softmax_dims=[list(d) for d in obs.softmax_dims],
        shapes={k: list(v) for k, v in obs.shapes.items()},
        probs=None if obs.probs is None else encode_tensor(obs.probs),
        scores=None if obs.scores is None else encode_tensor(obs.scores),
        dropout_in_eval=obs.dropout_in_eval,
        discarded_fills=obs.discarded_fills,
    )


def _to(attempt, device):
    if isinstance(attempt, torch.nn.Module) and device != "cpu":
        return attempt.to(device)
    return attempt


def _move(case, device):
    if device != "cpu":
        case.inputs = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in case.inputs.items()}


def _observed_case(cases):
    return next(c for c in cases if c.observe)


def _grads(kind, attempt, built, cases, guard, path: Path, device: str, full: bool) -> tuple[Probe, dict, list[str]]:
    """One case with gradients on: which leaves (parameters by their contract role, or the float
    inputs of functions) receive no gradient, and (``full``) the outputs and every gradient, which
    the grading process compares with the reference's. A backward that raises is the attempt's
    error, with its line. Also the autograd graph's node names: what ran at the aten level."""
    case, leaves = kind.grad_leaves(attempt, grads_case(cases), built)
    nodes: list[str] = []
    try:
        _seed(0, device)
        with guard.armed():
            outputs = kind.run(attempt, case)
            nodes = graph_nodes(list(outputs.values()))
            total = 0
            for name, out in outputs.items():
                where = case.mask(name, tuple(out.shape)).to(out.device)
                total = total + (out.nan_to_num() * where.to(out.dtype)).sum()
            total.backward()
    except BaseException as exc:
        problem = describe(exc, path, "backward")
        return Probe(False, "probe.backward_raised", problem.params), {}, nodes
    missing = [n for n, p in leaves.items() if p.grad is None]
    values: dict = {}
    if full:
        values = {"outputs": {n: encode_tensor(o) for n, o in outputs.items()},
                  "grads": {n: encode_tensor(p.grad) for n, p in leaves.items() if p.grad is not None}}
    return Probe(not missing, "", {}, missing), values, nodes


def _device(kind, attempt, cases, guard, attempt_file: str) -> Probe:
    """Run the observed case with device placement emulated (see observe.DeviceTracker)."""
    case = _observed_case(cases)
    case.inputs = {k: v.detach().clone() if isinstance(v, torch.Tensor) else v for k, v in case.inputs.items()}
    tracker = DeviceTracker(kind.device_tensors(attempt, case), attempt_file)
    try:
        with guard.armed(), torch.no_grad(), tracker.scripted_opaque(attempt), tracker:
            outputs = kind.run(attempt, case)
    except BaseException as exc:
        return Probe(None, "probe.device_failed", {"type": type(exc).__name__, "text": str(exc)[:200]})
    if tracker.problem:
        problem = dict(tracker.problem)
        return Probe(False, "device.mixed" if problem["origin_line"] else "device.mixed_no_origin", problem)
    for out in outputs.values():  # an output never seen made (out of a torch.func transform) is not judged
        if isinstance(out, torch.Tensor) and id(out) not in tracker.on_device and id(out) in tracker.origin:
            return Probe(False, "device.output_on_cpu", {})
    return Probe(True)


__all__ = ["run_attempt", "describe", "_tolist"]


def prepare(path: Path, kind, ci: int, channel, protect: tuple[str, ...] = (), forget: list[str] | None = None):
    """The set-up every child that runs the attempt again on the CPU shares (the trace child, the
    substitution child of :mod:`.substitute`): the references forgotten, the guard made, the seed
    set, the file loaded and config ``ci`` built under the guard. ``(guard, namespace, built)``, or
    ``None`` when loading or building raised."""
    _forget_references(forget)
    guard = Guard(protect)
    _seed(0, "cpu")  # the case runs where it is, on the CPU
    try:
        with guard.armed():
            namespace = load(path)
            built = kind.build(namespace, ci, channel)
    except BaseException:
        return None
    return guard, namespace, built


def trace_attempt(path: Path, kind, ci: int, case_index: int, channel, protect: tuple[str, ...] = (),
                  forget: list[str] | None = None, cover: tuple[tuple[int, int], ...] = (),
                  finals: bool = False) -> dict:
    """The trail of the attempt on one case (see :mod:`.trace`): which line made which tensor,
    for the divergence finder. Run only for a failing attempt. ``forget``: as for :func:`run_attempt`;
    ``cover``: (config, case) pairs run again after it, the lines of the file each runs sent back
    (``lines``, see :mod:`.groups`); ``finals``: the steps that made the outputs carry the outputs'
    values as the call returned them (an output made empty and filled by slice writes), for a repair
    that asks whether the outputs came out right."""
    from attnprep.grader.trace import Tracer

    prepared = prepare(path, kind, ci, channel, protect, forget)
    if prepared is None:
        return {"steps": [], "raised_at": None}
    guard, namespace, built = prepared
    case = kind.cases(ci)[case_index]
    sources = [t for t in case.inputs.values() if isinstance(t, torch.Tensor)]
    tracer = Tracer(sources, str(path))
    outputs = None
    try:
        with guard.armed(), tracer, torch.no_grad():
            outputs = kind.run(built.attempt, case)
    except BaseException as exc:
        tracer.note_exception(exc)
    lines = lines_run(path, kind, namespace, cover, channel, guard) if cover else []
    if guard.opened:
        return {"steps": [], "raised_at": None}
    marked = tracer.mark_outputs(outputs)
    if finals:
        tracer.finalise(outputs, marked)
    return {"steps": [s.to_data() for s in tracer.steps], "raised_at": tracer.raised_at,
            "outputs": marked, "marks": [list(m) for m in tracer.marks], "lines": lines}


def lines_run(path: Path, kind, namespace: dict, runs, channel, guard: Guard) -> list:
    """Per (config, case) of ``runs``: the lines of ``path`` the case runs, in the order each first
    runs (None when building or running it raised). Each config is built afresh (the traced one
    may have kept state), the case run as the grade runs it, under ``sys.settrace`` for this file's
    frames only."""
    name = str(path)
    built: dict[int, object] = {}
    out: list = []
    for ci, ni in runs:
        seen: dict[int, None] = {}

        def local(frame, event, arg, seen=seen):
            if event == "line":
                seen[frame.f_lineno] = None
            return local

        def call(frame, event, arg):
            return local if frame.f_code.co_filename == name else None

        try:
            if ci not in built:
                _seed(0, "cpu")
                with guard.armed():
                    built[ci] = kind.build(namespace, ci, channel)
            case = kind.cases(ci)[ni]
            case = dataclasses.replace(case, inputs={k: v.clone() if isinstance(v, torch.Tensor) else v
                                                     for k, v in case.inputs.items()})
            _seed(EVAL_SEED if case.check == "eval" else 0, "cpu")
            sys.settrace(call)
            try:
                with guard.armed(), torch.no_grad():
                    kind.run(built[ci].attempt, case)
            finally:
                sys.settrace(None)
        except BaseException:  # noqa: BLE001 — a run that raises says nothing of its lines
            out.append(None)
            continue
        out.append(list(seen))
    return out
