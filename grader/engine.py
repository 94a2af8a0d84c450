"""Grade one file: syntax-check it here, run it in a forked child, judge here.

The exercise comes resolved (an :class:`~attnprep.exercises.Exercise`); its kind
(:mod:`attnprep.grader.kinds`) says how to drive it. Nothing here knows any exercise or kind.
"""

from __future__ import annotations

import io
import mmap
import os
import re
import struct
import time
import tokenize
from dataclasses import dataclass, field, replace
from pathlib import Path

from attnprep import exercises
from attnprep.grader.result import Check, ErrorInfo, Result, Verdict, Words, msg

DEFAULT_TIMEOUT = 10.0
_warm = False


def warm_up() -> None:
    """Import torch single-threaded (so forking stays safe) and the engine's modules, and put the
    built-in watch of the aten ops every grading child watches in place here, once, for the children
    to inherit (``forbidden.watch``)."""
    global _warm
    if _warm:
        return
    import torch

    torch.set_num_threads(1)
    from attnprep.grader import child, forbidden, judge, kinds, observe, sandbox, variants, wire  # noqa: F401

    forbidden.watch(observe.ATTENTION_OPS)
    _warm = True


def exercise_of(path: Path, source: str, exercise_id: str | None) -> exercises.Exercise:
    """The exercise: as given, else the file's ``# attnprep: <id>`` line, else its file name."""
    if exercise_id:
        return exercises.get(exercise_id)
    named = exercises.detect(source)
    if named:
        return exercises.get(named)
    return exercises.get(path.stem)


def _syntax(path: Path, raw: bytes) -> ErrorInfo | None:
    """The file's syntax error, decoding strictly first: compile() and importlib accept invalid
    UTF-8 inside a comment, ``python file.py`` does not."""
    encoding = "utf-8"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding)
        compile(text, str(path), "exec", dont_inherit=True)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return ErrorInfo("syntax", msg("error.not_utf8", encoding=encoding, byte=f"{exc.object[exc.start]:#x}", line=line))
    except (SyntaxError, ValueError) as exc:
        lineno = getattr(exc, "lineno", None)
        if not lineno:  # the encoding itself (detect_encoding names no line), or a null byte
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as bad:
                line = raw[: bad.start].count(b"\n") + 1
                return ErrorInfo("syntax", msg("error.not_utf8", encoding="utf-8", byte=f"{bad.object[bad.start]:#x}", line=line))
            lineno = _line_of_encoding_problem(raw)
        text = getattr(exc, "text", None)
        tb = ""
        if text and lineno:
            shown = text.rstrip().expandtabs()
            tb = f"  File \"{path.name}\", line {lineno}\n    {shown.lstrip()}\n"
            offset = getattr(exc, "offset", None)
            if offset and 0 < offset <= len(shown) + 1:  # the caret under the column Python names
                end = getattr(exc, "end_offset", None) or offset + 1
                if getattr(exc, "end_lineno", lineno) != lineno or end <= offset:
                    end = offset + 1
                indent = len(shown) - len(shown.lstrip())
                start = max(offset - 1 - indent, 0)
                tb += "    " + " " * start + "^" * max(1, min(end, len(shown) + 1) - offset) + "\n"
        return ErrorInfo("syntax", msg("error.syntax", type=type(exc).__name__, text=getattr(exc, "msg", None) or str(exc),
                                       file=path.name, line=lineno or 1), tb)
    return None


def _line_of_encoding_problem(raw: bytes) -> int:
    """The line Python would name for a source it cannot read as text: the first null byte's, else
    the coding declaration's (the first two lines), else line 1."""
    if b"\0" in raw:
        return raw[: raw.index(b"\0")].count(b"\n") + 1
    for number, line in enumerate(raw.splitlines()[:2], 1):
        if re.match(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+", line):
            return number
    return 1


def grade(path: Path, exercise: exercises.Exercise, *, seed: int, device: str, timeout: float,
          protect: tuple[str, ...] = (), divergence: bool = True) -> Result:
    """Grade the file at ``path`` as ``exercise``. ``protect``: folders the attempt (and every
    process it starts) may not write, which the caller owns (the user's data folder).
    ``divergence=False``: no line is looked for (the result's ``divergence`` is None, no trace
    child is forked); the verdict, the checks and the mistakes named are the same."""
    start = time.perf_counter()
    path = path.resolve()
    raw = path.read_bytes()
    source = raw.decode("utf-8", errors="replace")
    notes = []
    named = exercises.detect(source)
    if named and named != exercise.id:
        notes.append(msg("note.header_disagrees", header=named, exercise=exercise.id))

    def done(result: Result) -> Result:
        return replace(result, notes=tuple(notes) + result.notes, duration_s=time.perf_counter() - start)

    syntax = _syntax(path, raw)
    if syntax is not None:
        return done(Result(exercise.id, str(path), Verdict.SYNTAX, checks=(Check("syntax", False, syntax.message),), error=syntax))
    if exercises.is_blank(exercise.id, source):  # the one test `list` uses too
        blank = ErrorInfo("blank", msg("error.blank", exercise=exercise.id))
        return done(Result(exercise.id, str(path), Verdict.ERROR, error=blank))

    warm_up()
    from attnprep.grader import child, judge, sandbox
    from attnprep.grader.kinds import kind_for
    from attnprep.grader.wire import Reply, WireError

    kind = kind_for(exercise, seed)
    where = mmap.mmap(-1, 8)  # shared with the forked child: the attempt's line it is running
    forget = child.reference_modules()  # asked here: cheaper than in the child (see there)
    outcome = sandbox.run(lambda channel: child.run_attempt(path, kind, device, channel, where, protect, forget), timeout,
                          answer=_answerer(kind))
    stdout = outcome.stdout or ""  # as printed: the report shows its control characters (attnprep.safe_text)
    if outcome.data is None:
        line = struct.unpack("<q", where[0:8])[0]
        where.close()
        return replace(done(_ended(exercise.id, path, outcome, timeout, line, source)), stdout=stdout)
    where.close()
    try:
        reply = Reply.decode(outcome.data)
        reply.check_complete(kind)
    except WireError as exc:
        detail = msg(exc.key, **exc.params)
        return done(Result(exercise.id, str(path), Verdict.ERROR, checks=(Check("runs", False, msg("error.malformed", detail=detail)),),
                           error=ErrorInfo("malformed", msg("error.malformed", detail=detail))))
    try:
        reply.say_names(kind.names)
    except Exception:  # noqa: BLE001 — only words: the names stay as the child wrote them
        if os.environ.get("ATTNPREP_DEBUG"):
            raise
    tracing: list[_Tracing] = []
    failing = _Failing()  # what the judge said of the outputs (nothing: it compared none)
    try:
        judged = judge.Judge(exercise, kind, reply, path)

        def compared(verdict: Verdict, failures=(), shape_failures=()) -> None:
            # the outputs are wrong: the trace child runs while the judge names the mistake
            nonlocal failing
            failing = _Failing(tuple(failures), tuple(shape_failures))
            if verdict in _TRACED and divergence:
                tracing.append(_Tracing(path, exercise, kind, reply, timeout, verdict, failing, protect))

        result = judged.result(compared=compared)
        if not divergence:
            pass
        elif result.verdict is Verdict.CONTRACT:
            result = replace(result, divergence=_contract_line(source, result))
        elif (measured := _structure_line(result)) is not None:
            result = replace(result, divergence=measured)
        elif _worth_tracing(result):
            started = tracing[0] if tracing else _Tracing(path, exercise, kind, reply, timeout, result.verdict, failing, protect,
                                                          result.checks)
            tracing.append(started)
            found = started.divergence()
            if result.verdict is Verdict.STRUCTURE and found is not None and found.reason != "output":
                found = None  # right outputs: only an output that keeps another value says where
            result = _one_scale(replace(result, divergence=found))
        if divergence and not result.passed and result.divergence is None and result.verdict is not Verdict.CONTRACT:
            result = replace(result, divergence=_contract_line(source, result, "check"))  # a check about a layer
    except Exception as exc:  # our bug, not the attempt's: say so, never blame the user
        import traceback

        result = Result(exercise.id, str(path), Verdict.ERROR, internal=True,
                        error=ErrorInfo("internal", msg("error.internal_judge", type=type(exc).__name__, text=str(exc)),
                                        traceback.format_exc()))
    finally:
        for t in tracing:
            t.close()
    return replace(done(result), stdout=stdout)


def _one_scale(result: Result) -> Result:
    """The mistake panel's score ratio and the divergence's factor, said of one case: a scale
    mistake's factor depends on the sizes (1/sqrt(num_heads) for sqrt(d_model)), and the divergence
    was traced on the case it names, so the evidence takes that case's factor."""
    d = result.divergence
    if d is None or d.reason != "scaled" or not d.case:
        return result
    try:
        factor = float(d.named)
    except ValueError:
        return result
    agreed = msg("evidence.score_ratio_on", ratio=factor, case=d.case, config=d.config)
    diagnoses = tuple(replace(g, evidence=tuple(agreed if e.key == "evidence.score_ratio_on" else e for e in g.evidence))
                      for g in result.diagnoses)
    return replace(result, diagnoses=diagnoses)


def _contract_line(source: str, result: Result, reason: str = "contract"):
    """For a contract failure about one of the attempt's layers (a bias the contract's layer does
    not have), the line that makes that layer, or None. ``reason`` "check": a failed check of
    another kind about one layer (LoRA's lora_B not zero at the start): the line that sets it up,
    an initialisation of it (``nn.init.zeros_(self.lora_A.weight)``) before the line that makes it."""
    from attnprep.grader import divergence
    from attnprep.grader.result import Divergence

    for check in result.checks:
        params = check.message.params if check.passed is False and check.message is not None else {}
        layer = params.get("layer")
        if isinstance(layer, str) and layer:
            attr = layer.split(".")[-1]
            line = divergence.attribute_line(source, attr)
            if line is not None and reason == "check":
                line = divergence.initialised_line(source, attr) or line
            if line is not None:
                code = source.splitlines()[line - 1].strip()
                return Divergence(line, code, f"self.{attr}", (), "", reason, str(params.get("role", "")))
    return None


def _structure_line(result: Result):
    """For a ``structure`` verdict, the line a failed structure check measured its figure on (the
    projection that multiplied the whole prefix, the tensor of per-head keys), or None."""
    from attnprep.grader import judge
    from attnprep.grader.result import Divergence

    if result.verdict is not Verdict.STRUCTURE:
        return None
    for check in result.checks:
        params = check.message.params if check.passed is False and check.message is not None else {}
        line, code = params.get("line"), params.get("code")
        if check.id.startswith(judge.STRUCTURE) and isinstance(line, int) and line > 0 and isinstance(code, str):
            return Divergence(line, code, "", (), "", "structure", ref_code=code)
    return None


_TRACED = (Verdict.WRONG_OUTPUT, Verdict.MASK_LEAK, Verdict.WRONG_SHAPE)  # failures of values or shapes


def _worth_tracing(result: Result) -> bool:
    """A failure the attempt's own lines explain: wrong values or shapes, or an exception it raised."""
    if result.verdict in _TRACED or result.verdict is Verdict.STRUCTURE:
        return True
    return result.verdict is Verdict.ERROR and result.error is not None and result.error.kind == "exception"


@dataclass(frozen=True)
class _Failing:
    """Where the outputs were wrong, as the judge tells the engine when it has compared them (its
    ``compared`` callback): (config, case index) pairs of wrong values and of wrong shapes."""

    failures: tuple[tuple[int, int], ...] = ()
    shape_failures: tuple[tuple[int, int], ...] = ()


class _Tracing:
    """The divergence of a failing attempt, found in two halves: the trace child is forked when
    this is made (as soon as the outputs are known to be wrong, so that it runs while the judge
    names the mistake), :meth:`divergence` serves it and compares the trails. Finding it is a help
    on top of the verdict, never a reason for the verdict to fail: any exception of ours gives None.
    Traced on a case that fails the way the verdict says (a wrong shape, else wrong values)."""

    def __init__(self, path: Path, exercise, kind, reply, timeout: float, verdict: Verdict, failing: _Failing,
                 protect: tuple[str, ...] = (), checks=()):
        self.path, self.exercise, self.kind, self.reply, self.timeout = path, exercise, kind, reply, timeout
        self.child = None
        self.cover: tuple[list[tuple[int, int]], int] = ([], 0)
        try:
            shape_first = verdict is Verdict.WRONG_SHAPE and failing.shape_failures
            failures = list(failing.shape_failures if shape_first else failing.failures)
            self.where = (_clearest(kind, failures) if failures else _structure_case(kind, reply, verdict, checks)
                          or _wrong_dtype_in(kind, reply) or _raised_in(kind, reply))
            ci, ni = self.where
            self.zero_bias = next((frozenset(c.zero_bias) for c in reply.configs if c.index == ci), frozenset())
            self.cover = _to_cover(kind, reply, failing, self.where)
            self.protect = protect
            self.child = _start_trace(path, kind, ci, ni, timeout, protect, tuple(self.cover[0]))
        except Exception:  # noqa: BLE001
            if os.environ.get("ATTNPREP_DEBUG"):
                raise

    def divergence(self):
        if self.child is None:
            return None
        from attnprep.grader import sandbox

        try:
            return _divergence(self.path, self.exercise, self.kind, self.child, self.where, self.zero_bias,
                               self.timeout, self.protect, self.cover)
        except sandbox.Starved:  # a refinement's child starved by a loaded machine: no line rather than another one
            return None
        except Exception:  # noqa: BLE001
            if os.environ.get("ATTNPREP_DEBUG"):
                raise
            return None
        finally:
            self.close()

    def close(self) -> None:
        if self.child is not None:
            self.child.close()


def _to_cover(kind, reply, failing: _Failing, where: tuple[int, int]) -> tuple[list[tuple[int, int]], int]:
    """The cases the trace child runs again for their lines (see :mod:`.groups`): failing and
    passing ones, when some of each (values failing only; none for a shape or a raise)."""
    from attnprep.grader import groups

    fails = [tuple(f) for f in failing.failures]
    if failing.shape_failures or tuple(where) not in fails:
        return [], 0
    ran = [(c.index, i) for c in reply.configs for i, case in enumerate(kind.cases(c.index)) if case.name in c.runs]
    return groups.runs_to_cover(fails, ran, tuple(where))


def _clearest(kind, failures: list[tuple[int, int]]) -> tuple[int, int]:
    """Of the failing (config, case) pairs, the one whose sizes name the most axes apart (so the
    divergence can write ``(B, T, H, D)`` rather than numbers); the first on a tie."""
    cases: dict[int, list] = {}  # drawn once per config (a kind may draw its cases afresh each time)

    def named(f: tuple[int, int]) -> int:
        if f[0] not in cases:
            cases[f[0]] = kind.cases(f[0])
        sizes = list(kind.axis_names(f[0], cases[f[0]][f[1]]).values())
        return len(set(sizes)) - len(sizes)

    return max(failures, key=lambda f: (named(f), -failures.index(f)))


def _structure_case(kind, reply, verdict: Verdict, checks=()) -> tuple[int, int] | None:
    """(config, case index) of the case a failed structure check names (its ``case``), for a
    ``structure`` verdict: the outputs are right, and what the attempt keeps or returns there is
    not (a cache stored after repeat_kv). None otherwise."""
    from attnprep.grader import judge

    if verdict is not Verdict.STRUCTURE:
        return None
    names = [c.message.params.get("case") for c in checks if c.passed is False and c.message is not None
             and c.id.startswith(judge.STRUCTURE)]
    for c in reply.configs:
        for i, case in enumerate(kind.cases(c.index)):
            if case.name in names:
                return c.index, i
    return None


def _wrong_dtype_in(kind, reply) -> tuple[int, int] | None:
    """(config, case index) of the first case whose outputs have the right values in another dtype
    than the case's (a cast back to the input's dtype left out), or None."""
    for c in reply.configs:
        for i, case in enumerate(kind.cases(c.index)):
            outputs = c.runs.get(case.name)
            if isinstance(outputs, dict) and any(isinstance(run, dict) and run.get("type") == "Tensor"
                                                 and run.get("dtype") != case.dtype for run in outputs.values()):
                return c.index, i
    return None


def _raised_in(kind, reply) -> tuple[int, int]:
    """(config, case index) where the attempt raised: the first case it has no outputs for."""
    ci = reply.problem_config if reply.problem_config is not None else 0
    done = next((c.runs for c in reply.configs if c.index == ci), {})
    cases = kind.cases(ci)
    return ci, next((i for i, c in enumerate(cases) if c.name not in done), 0)


@dataclass
class Trails:
    """The attempt's trail on one case (from the child) and the reference's (traced here), each
    with where the parts of a script of calls start (``marks``: first step, label) and which steps
    made the named outputs (``made``)."""

    attempt: list
    raised_at: int | None
    marks: list[tuple[int, str]]
    made: dict[str, int]
    reference: list
    ref_marks: list[tuple[int, str]]
    ref_made: dict[str, int]
    lines: list = field(default_factory=list)  # per case run again for its lines (see groups): the lines it ran
    own: list = field(default_factory=list)  # per attempt step, the line it ran on before _by_statement charged it


def _start_trace(path: Path, kind, ci: int, ni: int, timeout: float, protect: tuple[str, ...] = (), cover=()):
    """Fork the child that traces the attempt on case ``ni`` of config ``ci`` (a ``sandbox.Running``);
    ``cover``: cases it then runs again for their lines."""
    from attnprep.grader import child, sandbox

    forget = child.reference_modules()  # asked here: cheaper than in the child (see there)
    return sandbox.start(lambda channel: child.trace_attempt(path, kind, ci, ni, channel, protect, forget, cover), timeout,
                         answer=_answerer(kind))


def trails(path: Path, exercise, kind, ci: int, ni: int, zero_bias: frozenset, timeout: float,
           protect: tuple[str, ...] = ()) -> Trails | None:
    """Trace the attempt on case ``ni`` of config ``ci`` in a child, and the reference here (the
    way the kind drives the attempt, see ``trail_reference``); None when the child sent no trail."""
    with _start_trace(path, kind, ci, ni, timeout, protect) as child:
        return _trails(path, exercise, kind, child, ci, ni, zero_bias)


def _trails(path: Path, exercise, kind, running, ci: int, ni: int, zero_bias: frozenset) -> Trails | None:
    """:func:`trails` with the child already started: the reference is traced here while the child
    runs, then the child is served to its end."""
    from attnprep.grader import outputs as kept_outputs
    from attnprep.grader.trace import Step

    case = kind.cases(ci)[ni]
    # the same case of the same exercise is traced again for every failing attempt: kept with the
    # outputs (outputs.keep), each trail given its own steps
    ref_steps, ref_marks, ref_made = kept_outputs.Outputs(exercise, kind).trail(
        ci, zero_bias, case, lambda: trace_reference(exercise, kind, ci, zero_bias, case))
    ref_steps, ref_marks, ref_made = [_own_step(s) for s in ref_steps], list(ref_marks), dict(ref_made)
    outcome = running.finish()
    if not isinstance(outcome.data, dict):
        return None
    try:
        steps = [Step.from_data(s) for s in outcome.data.get("steps", [])]
        raised_at = outcome.data.get("raised_at")
        raised_at = raised_at if isinstance(raised_at, int) else None
        marks, made = _trail_extras(outcome.data, len(steps))
    except (TypeError, ValueError, AttributeError):
        return None
    own = [s.line for s in steps]  # a lambda of a table keeps its own line here
    _by_statement(steps, path)
    if raised_at is not None:
        raised_at = _statements(path).get(raised_at, (raised_at, ""))[0]
    lines = outcome.data.get("lines")
    return Trails(steps, raised_at, marks, made, ref_steps, ref_marks, ref_made,
                  lines if isinstance(lines, list) else [], own)


def trace_reference(exercise, kind, ci: int, zero_bias: frozenset, case):
    """The reference traced on ``case`` of config ``ci`` here: (its steps, its marks, the steps of
    its outputs). The global generator is seeded as the trace child seeds it for the attempt
    (``child.prepare``: seed 0, then the build), and given back as it was: a reference that draws
    from it (``nn.Linear(...)`` in LoRA's ``merged()``: a Kaiming init step) keeps the same values
    whatever this process drew before."""
    import torch

    from attnprep.grader.trace import Tracer

    with torch.random.fork_rng(devices=[]):
        torch.random.default_generator.manual_seed(0)  # as child._seed(0, "cpu")
        tracer = Tracer([t for t in case.inputs.values() if isinstance(t, torch.Tensor)], str(exercise.solution_path.resolve()))
        runner = kind.trail_reference(ci, zero_bias)  # built before tracing: no init steps
        with tracer, torch.no_grad():
            ref_made = tracer.mark_outputs(runner(case))
    _by_statement(tracer.steps, exercise.solution_path.resolve())
    return tracer.steps, list(tracer.marks), ref_made


def _own_step(step):
    """A copy of a kept reference ``step`` whose lists are its own (its values and scalars shared:
    nothing changes them)."""
    return replace(step, shape=list(step.shape), parents=list(step.parents), stack=list(step.stack),
                   scalars=list(step.scalars), inputs=list(step.inputs))


def _divergence(path: Path, exercise, kind, running, where: tuple[int, int], zero_bias: frozenset,
                timeout: float = DEFAULT_TIMEOUT, protect: tuple[str, ...] = (), cover=()):
    """The attempt traced on the case where it first fails, in a second child (failures only,
    ``running``), and the reference here; compared."""
    from attnprep.grader import divergence

    ci, ni = where
    t = _trails(path, exercise, kind, running, ci, ni, zero_bias)
    if t is None:
        return None
    case = kind.cases(ci)[ni]
    axes = kind.axis_names(ci, case)
    outputs = (t.made, t.ref_made)
    files = dict(source=path.read_text(encoding="utf-8", errors="replace"),
                 ref_source=exercise.solution_path.read_text(encoding="utf-8"), marks=(t.marks, t.ref_marks),
                 tolerance=case.tolerance)
    part_axes = lambda part: kind.part_axis_names(ci, case, part)  # noqa: E731
    found = divergence.find(t.attempt, t.reference, axes, t.raised_at, outputs, **files, part_axes=part_axes)
    if found is None:
        return None
    if not found.code:  # a line no traced step was made on (where it raised): the file's own text
        code = _statement(path, found.line)[1]
        found = replace(found, code=code, name=found.name or divergence.assigned(code))
    from attnprep.grader import pymade, substitute

    found = pymade.python_made(found, t, path, kind, ci, ni, timeout, protect, files["source"])
    found = substitute.second_opinion(found, t, path, kind, ci, ni, timeout, protect, files["source"])
    found = _call_site(found, t.attempt, path, exercise, files["source"])
    found = _passed_instead(found, path, files["source"])
    found = _listed_stages(found, path, files["source"])
    if cover and len(t.lines) == len(cover[0]):
        from attnprep.grader import groups

        import linecache

        callers = frozenset(line for s in t.attempt if s.line == found.line for line in (s.stack or ()))
        found = groups.group_line(found, t.lines, cover[1], _statements(path), lambda n: linecache.getline(str(path), n).strip(),
                                  callers)
    found = _table_entry(found, t, path, files, axes, part_axes)
    from attnprep.grader import defined

    target = defined.defining_line(files["source"], found.line, found.reason)
    if target is not None:  # the wrong number read here is typed there (see defined)
        code = _line_code(path, target)
        reason = "scaled_defined" if found.reason == "scaled" else found.reason  # "scalar" names the number itself
        found = replace(found, line=target, code=code, reason=reason)
    else:  # a step written after the line, left out by a flag set elsewhere
        ran = {n for s in t.attempt for n in (*(s.stack or ()), s.line)} | set(t.own)
        flag = defined.flag_line(files["source"], found.line, found.reason, ran, frozenset(kind.config_params(ci)))
        if flag is not None:
            found = replace(found, line=flag[0], code=_line_code(path, flag[0]), name=flag[1], reason="flag_skips")
        else:  # a step run (or picked) by a setting of the file that, taken the other way, mends the case
            found = _setting_runs(found, t, path, kind, ci, ni, timeout, protect, files["source"], files["ref_source"])
    from attnprep.grader.result import Divergence

    config = ", ".join(f"{k}={v}" for k, v in kind.config_params(ci).items())
    part = kind.names(ci).get(found.part, found.part) if found.part else found.part  # the call, said in the language
    outputs = {str(n): n for n in kind.expected_shapes(ci, case)}  # an output of a script's call, said in the language too
    ref_name = outputs.get(found.ref_name, found.ref_name)
    return Divergence(found.line, found.code, found.name, found.shape, found.named, found.reason, ref_name,
                      found.ref_named, found.ref_code, part, case.name, config)


def _setting_runs(found, t: Trails, path: Path, kind, ci: int, ni: int, timeout: float, protect, source: str,
                  ref_source: str):
    """``found``, or the line of the setting whose branch, taken the other way, makes the case right
    (reason ``flag_runs``), or of the read of a module whose twin, built alike and never read, makes it
    right there (``twin_read``), or of two enum members whose numbers, swapped, make it right
    (``enum_order``), or of two stages whose order, swapped, makes it right (``stage_order``), or of two
    values of a table read by a variable key that, swapped, make it right (``values_swapped``), or of a
    default other than the reference's that, written as the reference's, makes it right
    (``default_differs``), or of an integer setting the line reads that, one more or one less, makes it
    right (``setting_off_by_one``), or of a plain Python number that, one off or read from another axis,
    makes it right (``number_off``), or of a mask that, read the other way round where it is taken in, makes
    it right (``mask_negated``), or of a value chosen in a literal (a document's entry, a table's value, a
    keyword's setting) that, written otherwise, makes it right (``literal_setting``; see :mod:`.repair`)."""
    from attnprep.grader import repair

    setting = repair.setting_runs(found, t, path, kind, ci, ni, timeout, protect, source)
    reason = "flag_runs"
    if setting is None:  # a module read where its twin, built alike and never read, belongs
        setting, reason = repair.twin_read(found, t, path, kind, ci, ni, timeout, protect, source), "twin_read"
    if setting is None:  # an enum's members numbered the other way round
        setting, reason = repair.enum_order(found, t, path, kind, ci, ni, timeout, protect, source), "enum_order"
    if setting is None:  # two stages of one value written in the other order
        setting, reason = repair.stage_order(found, t, path, kind, ci, ni, timeout, protect, source), "stage_order"
    if setting is None:  # two neighbouring entries of a list a loop runs through, in the other order
        setting, reason = repair.entry_order(found, t, path, kind, ci, ni, timeout, protect, source), "entry_order"
    if setting is None:  # a key of a table of the file written where another of its keys belongs
        chosen = repair.key_chosen(found, t, path, kind, ci, ni, timeout, protect, source)
        if chosen is not None:
            line, table, key = chosen
            return replace(found, line=line, code=_line_code(path, line), name=table, named=repr(key), reason="key_chosen")
    if setting is None:  # two values of a table read by a variable key, each given to the other's key
        setting, reason = repair.values_swapped(found, t, path, kind, ci, ni, timeout, protect, source), "values_swapped"
    if setting is None:  # a helper's one call handing it a literal: left to its default, or a flag turned
        given = repair.call_argument(found, t, path, kind, ci, ni, timeout, protect, source)
        if given is not None:
            line, name, reason, function = given
            return replace(found, line=line, code=_line_code(path, line), name=name, reason=reason, ref_name=function)
    if setting is None:  # a default the grader leaves alone, other than the reference's
        setting, reason = repair.default_differs(found, t, path, kind, ci, ni, timeout, protect, source, ref_source), "default_differs"
    if setting is None:  # an integer setting the line reads (an offset, an axis, a count), typed one off
        setting, reason = repair.setting_off_by_one(found, t, path, kind, ci, ni, timeout, protect, source), "setting_off_by_one"
    if setting is None:  # a plain Python number one off, or a size read from another axis
        number = repair.number_off(found, t, path, kind, ci, ni, timeout, protect, source)
        if number is not None:
            line, name, changed = number
            return replace(found, line=line, code=_line_code(path, line), name=name, named=changed, reason="number_off")
    if setting is None:  # a mask made in one convention, combined or applied as if in the other
        negated = repair.mask_negated(found, t, path, kind, ci, ni, timeout, protect, source)
        if negated is not None:
            line, name, changed = negated
            return replace(found, line=line, code=_line_code(path, line), name=name, named=changed, reason="mask_negated")
    if setting is None:  # a value chosen in a literal: a document's entry, a table's value, a keyword's setting
        chosen = repair.literal_setting(found, t, path, kind, ci, ni, timeout, protect, source)
        if chosen is not None:
            line, name, changed = chosen
            return replace(found, line=line, code=_line_code(path, line), name=name, named=changed, reason="literal_setting")
    if setting is None:
        return found
    return replace(found, line=setting[0], code=_line_code(path, setting[0]), name=setting[1], reason=reason)


NOT_AN_ENTRY = frozenset({"group", "helper_call", "helper_passed", "helper_applies", "raised", "raised_first"})  # lines said for
# another reason than the value a step made there: a parting line, a helper's call, where it raised


def _table_entry(found, t: Trails, path: Path, files: dict, axes, part_axes):
    """``found`` said at the first line of a statement written over several lines (a table of
    lambdas, a list of steps) whose wrong value was made inside one of its lambdas: the line of
    that lambda instead, the entry being run when the value went wrong, shown as it reads (the
    statement as a whole is no one operation). The trail is lined up again with each step of such
    a lambda charged to the lambda's first line rather than to the statement's, and what the
    finder says then is taken when it is one of those lambdas; else ``found`` is unchanged."""
    import linecache

    first, statement = _statements(path).get(found.line, (0, ""))
    if found.reason in NOT_AN_ENTRY or not first:
        return found
    spans = _lambda_spans(files["source"]).get(first, ())
    if first != found.line:  # already said inside one of its lambdas (a number of that lambda): shown as that line reads
        code = linecache.getline(str(path), found.line).strip().rstrip(",")
        inside = any(a <= found.line <= b for a, b in spans)
        return replace(found, code=code) if inside and code and found.code == statement[:len(found.code)] else found
    if len(t.own) != len(t.attempt):
        return found
    entry = lambda line: next((a for a, b in spans if a <= line <= b), None)  # noqa: E731 — a line's lambda
    steps, moved = [], set()
    for step, own in zip(t.attempt, t.own):
        at = entry(own) if step.line == found.line else None
        if at is None or at == found.line:
            steps.append(step)
            continue
        moved.add(at)
        steps.append(replace(step, line=at, code=linecache.getline(str(path), at).strip().rstrip(",")[:200]))
    if not moved:
        return found
    from attnprep.grader import divergence

    try:
        again = divergence.find(steps, t.reference, axes, t.raised_at, (t.made, t.ref_made), **files, part_axes=part_axes)
    except Exception:  # noqa: BLE001 — a second look that fails leaves the first one as it was
        return found
    if again is None or again.line not in moved or again.reason in NOT_AN_ENTRY:
        return found
    code = linecache.getline(str(path), again.line).strip().rstrip(",")
    return replace(again, code=code, name=divergence.assigned(code), part=again.part or found.part) if code else found


def _lambda_spans(source: str) -> dict[int, tuple[tuple[int, int], ...]]:
    """The first line of each simple statement written over several lines -> the (first, last)
    lines of the lambdas written in it."""
    import ast

    from attnprep.grader.parsing import parsed, walk

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return {}
    found = {}
    for node in walk(tree):
        if isinstance(node, ast.stmt) and not hasattr(node, "body") and not hasattr(node, "cases") \
                and (node.end_lineno or 0) > node.lineno:
            spans = tuple((n.lineno, n.end_lineno) for n in ast.walk(node) if isinstance(n, ast.Lambda))
            if spans:
                found[node.lineno] = spans
    return found


def _ready_made(source: str, exercise, line: int | None = None) -> dict[str, tuple[int, int]]:
    """The top-level functions and classes of ``source`` that the exercise's stub gives ready-made
    (the same name and the same code, comments and docstrings aside): name -> (first, last line).
    ``line``: only asked whether that line is in one (none found when no definition of a stub's
    name holds it)."""
    import ast

    def defs(text: str) -> dict[str, ast.AST]:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return {}
        return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}

    def body(node) -> str:  # a tree parsed here for this question alone: its docstrings are dropped in place
        for n in ast.walk(node):
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.body and isinstance(n.body[0], ast.Expr) \
                    and isinstance(n.body[0].value, ast.Constant) and isinstance(n.body[0].value.value, str):
                n.body = n.body[1:] or [ast.Pass()]
            if isinstance(n, ast.FunctionDef):  # type hints aside
                n.returns = None
            elif isinstance(n, ast.arg):
                n.annotation = None
        return ast.dump(node, include_attributes=False)

    key = (exercise.id, str(exercise.stub_template))
    if key not in _STUB_BODIES:  # the stub's code is the same in every language: rendered once
        try:
            _STUB_BODIES[key] = {name: body(node) for name, node in defs(exercises.render_stub(exercise)).items()}
        except Exception:  # noqa: BLE001 — no stub to compare with: nothing is ready-made
            _STUB_BODIES[key] = {}
        # a helper written as the reference writes it is right too (the stub's, retyped)
        for name, node in defs(exercise.solution_path.read_text(encoding="utf-8")).items():
            if isinstance(node, ast.FunctionDef):
                _STUB_BODIES[key].setdefault(name, body(node))
    stub = _STUB_BODIES[key]
    mine = {name: node for name, node in defs(source).items() if name in stub}
    if line is not None and not any(node.lineno <= line <= node.end_lineno for node in mine.values()):
        return {}  # the line is in none of them: none is asked about
    return {name: (node.lineno, node.end_lineno) for name, node in mine.items() if body(node) == stub[name]}


_STUB_BODIES: dict[tuple, dict[str, str]] = {}  # (exercise id, stub template) -> its stub's top-level defs, as _ready_made compares them


def _argument_helpers(source: str, appliers: set | None = None) -> dict[str, tuple[int, int]]:
    """The file's top-level functions whose whole body is one ``return`` of an expression of their
    own arguments, with no number or text of their own (``def cast(x, dtype): return x.to(dtype)``,
    ``def transpose(x, perm): return x.permute(*perm)``): what they compute is the caller's choice
    of arguments, so a divergence inside one is its call's; and those that only apply, in order,
    the callables they are given (see _applies_what_it_is_given). Name -> (first, last line)."""
    import ast

    from attnprep.grader.parsing import parsed

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return {}
    found = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        body = node.body[1:] if node.body and isinstance(node.body[0], ast.Expr) \
            and isinstance(node.body[0].value, ast.Constant) else node.body
        a = node.args
        params = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None}
        if _applies_what_it_is_given(node, body, params):
            found[node.name] = (node.lineno, node.end_lineno)
            if appliers is not None:
                appliers.add(node.name)
            continue
        if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            continue
        names = [n.id for n in ast.walk(body[0].value) if isinstance(n, ast.Name)]
        own = [n for n in ast.walk(body[0].value) if isinstance(n, ast.Constant) and not isinstance(n.value, bool)
               and n.value is not None]
        if params and not own and any(n in params for n in names) and all(n in params for n in names):
            found[node.name] = (node.lineno, node.end_lineno)
    return found


def _applies_what_it_is_given(node, body, params: set[str]) -> bool:
    """A function that only calls, in order, the callables it is given on the value it is given
    (``for layer in layers: x = layer(x)``, then ``return x``): no number of its own, and every call
    is of an argument or of a loop variable over one. Its result is its caller's choice of layers."""
    import ast

    loops = [s for s in body if isinstance(s, ast.For)]
    if not loops or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return False
    known, callables = set(params), set()
    for loop in loops:
        if not (isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Name) and loop.iter.id in params
                and not loop.orelse):
            return False
        callables.add(loop.target.id)
        known.add(loop.target.id)
    for stmt in body:
        if not isinstance(stmt, (ast.For, ast.Assign, ast.Return)):
            return False
        for n in ast.walk(stmt):
            if isinstance(n, ast.Constant) and n.value is not None and not isinstance(n.value, bool):
                return False
            if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id in callables | params):
                return False
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                known.add(n.id)
            if isinstance(n, (ast.For, ast.Assign)) and n is not stmt and not isinstance(stmt, ast.For):
                return False
    names = {n.id for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return bool(callables) and names <= known


OWN_OPERATION = frozenset({"mask_as_numbers"})  # a bool mask cast to numbers: the cast is the mistake, not its arguments


def _call_site(found, steps, path: Path, exercise, source: str):
    """A divergence inside one of the stub's ready-made helpers (``precompute_freqs_cis``), or in a
    helper that only passes its arguments through to one operation, blames the learner's line that
    calls it: the helper is right, what the call passes it is not."""
    made = _ready_made(source, exercise, found.line)
    # (a reason that says the helper's one operation is the wrong one, whatever it is given, keeps its line)
    appliers: set[str] = set()
    ready = {**({} if found.reason in OWN_OPERATION else _argument_helpers(source, appliers)), **made}
    inside = next((name for name, (a, b) in ready.items() if a <= found.line <= b), None)
    if inside is None and found.reason in BETWEEN_STAGES and appliers:
        return _applier_call(found, steps, path, {n: ready[n] for n in appliers})
    if inside is None and found.reason in OWN_OPERATOR_REASONS:
        # wrong values made inside a function of the file from a number parameter its one call left at
        # the default (a chunk's mask helper called without its offset)
        step = next((s for s in steps if s.line == found.line and s.stack and len(s.stack) > 1), None)
        left = _default_left(source, step.stack[-1], step.stack[-2]) if step is not None else None
        if left is not None:
            return replace(_said_at(found, path, step.stack[-2], "default_left", left[0]), named=left[1])
    if inside is None:
        return found
    step = next((s for s in steps if s.line == found.line and s.stack), None)
    if step is None:
        return found
    outside = [line for line in step.stack if not any(a <= line <= b for a, b in ready.values())]
    if not outside:
        return found
    if inside not in made and inside not in appliers and found.reason in OWN_OPERATOR_REASONS and \
            _operator_of_its_own(source, inside):
        return found  # the right values handed to an operator the helper chose (`cols >= rows`): its line
    left = _default_left(source, outside[-1], outside[-2]) if len(outside) > 1 else None
    if left is not None:  # the helper's arguments are a function's own parameters, one left at its default
        function, parameter = left
        return replace(_said_at(found, path, outside[-2], "default_left", function), named=parameter)
    reason = "helper_call" if inside in made else "helper_applies" if inside in appliers else "helper_passed"
    return _said_at(found, path, outside[-1], reason, inside)


def _holding(tree, line: int):
    """The innermost function (a ``def``) of ``tree`` whose body holds ``line`` (after its ``def``
    line), or None."""
    import ast

    from attnprep.grader.parsing import walk

    around = [f for f in walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              and f.lineno < line <= (f.end_lineno or f.lineno)]
    return max(around, key=lambda f: f.lineno) if around else None


def _class_of(tree, function):
    """The class of ``tree`` that defines ``function`` in its body (a method's), or None."""
    import ast

    from attnprep.grader.parsing import walk

    return next((c for c in walk(tree) if isinstance(c, ast.ClassDef) and function in c.body), None)


def _default_left(source: str, line: int, caller: int) -> tuple[str, str] | None:
    """(the function, the parameter) when the call of a helper at ``line`` sits in a function of the
    file that the statement at ``caller`` calls, and it reads a parameter whose default is 0 (``offset=0``,
    ``past=0``) that this call leaves out, so that 0 is what the helper is given (a rotation's
    ``self.rotations(T, device=...)`` without its ``offset``); None otherwise."""
    import ast

    from attnprep.grader import parsing

    try:
        tree = parsing.parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    function = _holding(tree, line)
    if function is None:
        return None
    positional = [*function.args.posonlyargs, *function.args.args]
    defaults = {a.arg: d for a, d in parsing.defaults(function)}
    # an offset, a start, a past length left at 0 (a default of another number, a bias maximum of 8, is
    # a setting the function is right to read as given)
    numbers = {name for name, d in defaults.items() if isinstance(d, ast.Constant)
               and isinstance(d.value, (int, float)) and not isinstance(d.value, bool) and d.value == 0}
    read = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.lineno <= line <= (n.end_lineno or n.lineno)}
    wanted = numbers & read
    if not wanted:
        return None
    offset = 1 if positional and positional[0].arg in ("self", "cls") else 0
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and c.lineno <= caller <= (c.end_lineno or c.lineno)
             and parsing.last_name(c.func) == function.name]
    if len(calls) != 1:
        return None
    call = calls[0]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    given = {positional[offset + k].arg for k in range(len(call.args)) if offset + k < len(positional)}
    given |= {k.arg for k in call.keywords}
    left = sorted(wanted - given)
    return (function.name, left[0]) if len(left) == 1 else None


OWN_OPERATOR_REASONS = frozenset({"values", "made"})  # the step made wrong values from the inputs it was given


def _operator_of_its_own(source: str, name: str) -> bool:
    """The file's top-level function ``name`` returns one operator (``a * b``, ``cols >= rows``) of
    its arguments: the operator is the helper's own choice, not its caller's. A divergence there,
    the finder's first wrong step made from right inputs, is the operator's (the arguments were
    right: the finder would have said their lines first)."""
    import ast

    from attnprep.grader.parsing import parsed, top_function

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return False
    node = top_function(tree, name)
    if node is None:
        return False
    returns = [s for s in node.body if isinstance(s, ast.Return)]
    value = returns[-1].value if returns else None
    if isinstance(value, ast.Compare):
        return len(value.ops) == 1 and all(isinstance(x, ast.Name) for x in (value.left, *value.comparators))
    return isinstance(value, ast.BinOp) and isinstance(value.left, ast.Name) and isinstance(value.right, ast.Name)


BETWEEN_STAGES = frozenset({"skipped", "input"})  # a step missing between two stages of a list of layers
# the reasons that say wrong values were made on the found line (what a helper computes from its arguments)
VALUE_REASONS = frozenset({"values", "made", "made_python", "input", "incomplete", "skipped", "scalar"})


def _passed_instead(found, path: Path, source: str):
    """A divergence inside a function of the file, on a line that reads one of its parameters
    (``eps``, ``n``), where the function's one call passes for that parameter something else
    (``1e-5``, ``num_heads``) while the caller holds a value of the parameter's own name that nothing
    reads (its local ``n = floor_pow2(h)``, its parameter ``theta``, its object's ``self.eps``): that
    value was made for the helper, and the call hands it something else; said at the call (reason
    "passed_instead", the parameter named); so is a module's number (``DEFAULT_THETA = 10000.0``) read
    once, as such an argument (:func:`_constant_passed`). A call may name the function as the first
    argument of another (``checkpoint(self._normalise, x, 1e-5)``, ``functools.partial``), whose next
    arguments are its."""
    import ast

    from attnprep.grader import parsing

    if found.reason not in VALUE_REASONS or found.line is None or not source:
        return found
    try:
        tree = parsing.parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return found
    helper = _holding(tree, found.line)
    if helper is None:  # a module's number (``DEFAULT_THETA = 10000.0``) read once, as a helper's argument
        taken = _constant_passed(tree, found.line)
        if taken is None:
            return found
        line, helper_name, name = taken
        return replace(_said_at(found, path, line, "passed_instead", helper_name), named=name)
    blocks = (ast.FunctionDef, ast.For, ast.While, ast.If, ast.With)  # a simple statement, not one holding others
    statement = next((n for n in ast.walk(helper) if isinstance(n, ast.stmt) and not isinstance(n, blocks)
                      and n.lineno <= found.line <= (n.end_lineno or n.lineno)), None)
    if statement is None:
        return found
    read = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for name in sorted(read):
        passed = _passed_other(tree, helper, name)
        if passed is not None:
            return replace(_said_at(found, path, passed[0], "passed_instead", passed[1]), named=name)
    return found


def _passed_other(tree, helper, name: str) -> tuple[int, str] | None:
    """(the line, the function it calls) of ``helper``'s one call when it passes for its parameter
    ``name`` something else than a value of that name its caller holds and never reads; None
    otherwise."""
    import ast

    positional = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in helper.decorator_list)
    owner = _class_of(tree, helper)
    bound = 1 if owner is not None and not static and positional and positional[0] in ("self", "cls") else 0
    if name not in positional[bound:] + [a.arg for a in helper.args.kwonlyargs]:
        return None

    def names_helper(node) -> bool:  # helper, self.helper or cls.helper (a method: called from its own class)
        if owner is None:
            return isinstance(node, ast.Name) and node.id == helper.name
        return isinstance(node, ast.Attribute) and node.attr == helper.name and isinstance(node.value, ast.Name) \
            and node.value.id in ("self", "cls", owner.name)

    calls = []  # (the call, the arguments the helper gets from it)
    for call in ast.walk(owner if owner is not None else tree):
        if not isinstance(call, ast.Call):
            continue
        if names_helper(call.func):
            calls.append((call, call.args))
        elif call.args and names_helper(call.args[0]):
            calls.append((call, call.args[1:]))
    if len(calls) != 1:
        return None
    call, args = calls[0]
    if any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in call.keywords):
        return None
    arg = (dict(zip(positional[bound:], args)) | {k.arg: k.value for k in call.keywords}).get(name)
    caller = _holding(tree, call.lineno)
    if arg is None or caller is None or caller is helper:
        return None
    if isinstance(arg, ast.Attribute) and arg.attr == name or \
            any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(arg)):
        return None  # the caller's value is what it passes (changed on the way, n - 1: another story)
    return (call.lineno, helper.name) if name in _unread(tree, caller, call.lineno) else None


def _unread(tree, caller, line: int) -> set[str]:
    """The values ``caller`` holds at ``line`` that nothing reads: its parameters and the locals it sets
    before the line, and (a method's) the attributes its class sets on self."""
    import ast

    read = {n.id for n in ast.walk(caller) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    held = {a.arg for a in (*caller.args.posonlyargs, *caller.args.args, *caller.args.kwonlyargs)}
    held |= {t.id for n in ast.walk(caller) if isinstance(n, ast.Assign) and n.lineno < line
             for t in n.targets if isinstance(t, ast.Name)}
    held -= read
    owner = _class_of(tree, caller)
    if owner is not None:
        attributes = [n for n in ast.walk(owner) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                      and n.value.id == "self"]
        held |= {a.attr for a in attributes if isinstance(a.ctx, ast.Store)} - \
            {a.attr for a in attributes if isinstance(a.ctx, ast.Load)}
    return held


def _constant_passed(tree, line: int) -> tuple[int, str, str] | None:
    """(the call's line, the function, its parameter) when the module-level ``NAME = <number>`` at
    ``line`` is read once in the file, as an argument of a call of a function of the file that binds
    it to a parameter whose name the caller holds as a value nothing reads; None otherwise."""
    import ast

    made = [n for n in tree.body if isinstance(n, ast.Assign) and n.lineno == line and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, (int, float)) and not isinstance(n.value.value, bool)]
    if not made:
        return None
    constant = made[0].targets[0].id
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == constant and isinstance(n.ctx, ast.Load)]
    if len(reads) != 1:
        return None
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and any(a is reads[0] for a in c.args)]
    if len(calls) != 1 or not isinstance(calls[0].func, ast.Name):
        return None
    call = calls[0]
    helpers = [f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == call.func.id]
    caller = _holding(tree, call.lineno)
    if len(helpers) != 1 or caller is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    positional = [a.arg for a in (*helpers[0].args.posonlyargs, *helpers[0].args.args)]
    index = next(i for i, a in enumerate(call.args) if a is reads[0])
    if index >= len(positional):
        return None
    name = positional[index]
    return (call.lineno, helpers[0].name, name) if name in _unread(tree, caller, call.lineno) else None


def _listed_stages(found, path: Path, source: str):
    """``found`` said for a stage missing ("skipped", "input") on a line that calls the loop variable
    of ``for layer in self.layers:``, where the module lists its own layers once, in order (a tuple or
    list of them, ``nn.ModuleList([...])``, ``nn.Sequential(...)``): that list's line, where a layer
    was left out, added or put out of order (as for a helper that applies the layers it is given)."""
    import ast

    from attnprep.grader.parsing import parsed

    if found.reason not in BETWEEN_STAGES:
        return found
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return found
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for loop in (n for n in ast.walk(cls) if isinstance(n, ast.For)):
            if not (loop.body[0].lineno <= found.line <= (loop.body[-1].end_lineno or loop.lineno)):
                continue
            it = loop.iter
            if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Attribute) and isinstance(it.value, ast.Name)
                    and it.value.id == "self"):
                continue
            stmt = next((b for b in loop.body if b.lineno <= found.line <= (b.end_lineno or b.lineno)), None)
            calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                     and n.func.id == loop.target.id] if stmt is not None else []
            if not calls:
                continue
            lists = [n for n in ast.walk(cls) if isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" and t.attr == it.attr
                for t in n.targets)]
            if len(lists) == 1 and _lists_layers(lists[0].value):
                return _said_at(found, path, lists[0].lineno, "stages_listed", f"self.{it.attr}")
    return found


def _lists_layers(value) -> bool:
    """A display of layers: ``(self.a, self.b)``, ``[self.a, self.b]``, ``nn.ModuleList([...])``,
    ``nn.Sequential(self.a, self.b)``, each entry an attribute of self or a call making a layer."""
    import ast

    if isinstance(value, ast.Call) and isinstance(value.func, (ast.Attribute, ast.Name)):
        name = value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id
        if name == "ModuleList" and len(value.args) == 1:
            return _lists_layers(value.args[0])
        if name == "Sequential":
            return bool(value.args) and all(isinstance(a, (ast.Attribute, ast.Call)) for a in value.args)
        return False
    return isinstance(value, (ast.Tuple, ast.List)) and bool(value.elts) and all(
        isinstance(e, (ast.Attribute, ast.Call)) for e in value.elts)


def _applier_call(found, steps, path: Path, appliers: dict[str, tuple[int, int]]):
    """``found`` made inside a layer that a helper applying a list of layers ran (``run([scale,
    softmax], s)``), saying that a step is missing after it or before the next: the list is the
    caller's, so its line is said (a stage left out of the list), as for a helper's own line."""
    step = next((s for s in steps if s.line == found.line and s.stack), None)
    if step is None:
        return found
    k = next((n for n, line in enumerate(step.stack) if any(a <= line <= b for a, b in appliers.values())), None)
    if not k:  # (not run by an applier, or the applier is the outermost call: no caller of the file's)
        return found
    name = next(n for n, (a, b) in appliers.items() if a <= step.stack[k] <= b)
    return _said_at(found, path, step.stack[k - 1], "helper_applies", name)


def _said_at(found, path: Path, line: int, reason: str, helper: str):
    """``found`` said at the caller's statement ``line`` instead, for ``reason``: the line that calls
    ``helper`` (what it passes, or the layers it lists, is what is wrong)."""
    from attnprep.grader import divergence

    first, code = _statement(path, line)
    return replace(found, line=first, code=code, name=divergence.assigned(code), shape=(), named="",
                   reason=reason, ref_name=helper, ref_named="", ref_code="")


def _line_code(path: Path, line: int) -> str:
    """The code a divergence said at ``line`` shows: its statement on one line, or, for a line inside a
    statement written over several (an argument or a keyword of a call on a line of its own), that
    line as written."""
    first, code = _statement(path, line)
    if first != line:
        import linecache

        code = linecache.getline(str(path), line).strip().rstrip(",")
    return code


def _statement(path: Path, line: int) -> tuple[int, str]:
    """The statement ``line`` is in: its first line and its text on one line (:func:`_statements`),
    or ``line`` and the line as written when the statement is on that line alone."""
    first, code = _statements(path).get(line, (line, ""))
    if not code:
        import linecache

        code = linecache.getline(str(path), line).strip()
    return first, code


def _statements(path: Path) -> dict[int, tuple[int, str]]:
    """Each line of a statement written over several lines -> (its first line, the statement on one
    line without its comments): a trail step is charged to the statement, as a traceback names it."""
    import ast
    import textwrap

    from attnprep.grader.parsing import parsed, walk

    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    if text in _STATEMENTS:  # the reference's file, traced for every failing attempt: parsed once
        return _STATEMENTS[text]
    try:
        tree = parsed(text)
    except (SyntaxError, ValueError):
        return {}
    lines = text.splitlines()
    found = {}
    for node in walk(tree):
        end = getattr(node, "end_lineno", None)
        if not isinstance(node, ast.stmt) or hasattr(node, "body") or hasattr(node, "cases") or end is None \
                or end <= node.lineno:  # a compound statement (its body, or a match's cases) is not one line
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # a docstring
            continue
        segment = textwrap.dedent("\n".join(lines[node.lineno - 1:end]))
        try:
            comments = [t.start for t in tokenize.generate_tokens(io.StringIO(segment).readline) if t.type == tokenize.COMMENT]
        except (tokenize.TokenError, IndentationError, SyntaxError):
            continue
        parts = segment.split("\n")
        for row, col in reversed(comments):
            parts[row - 1] = parts[row - 1][:col]
        joined = " ".join(p.strip() for p in parts if p.strip()).replace("( ", "(").replace(" )", ")")
        joined = joined.replace("[ ", "[").replace(" ]", "]")
        for n in range(node.lineno, end + 1):
            found[n] = (node.lineno, joined)
    if len(_STATEMENTS) >= 64:
        _STATEMENTS.clear()
    _STATEMENTS[text] = found
    return found


_STATEMENTS: dict[str, dict[int, tuple[int, str]]] = {}  # a file's text -> what _statements found in it (read, never changed)


def _by_statement(steps: list, path: Path) -> None:
    """Charge each step of a statement written over several lines to its first line (in place)."""
    statements = _statements(path)
    for step in steps:
        if step.line in statements:
            step.line, step.code = statements[step.line]
            step.code = step.code[:200]


def _trail_extras(data: dict, n: int) -> tuple[list[tuple[int, str]], dict[str, int]]:
    """The child's marks (where each part of a script starts) and the steps of its named outputs,
    checked to be plain data about its ``n`` steps (what the attempt's process sends is never
    trusted); raises ValueError when they are not."""
    marks = data.get("marks") or []
    made = data.get("outputs") or {}
    if not (isinstance(marks, list) and all(isinstance(m, list) and len(m) == 2 and isinstance(m[0], int)
                                            and 0 <= m[0] <= n and isinstance(m[1], str) for m in marks)):
        raise ValueError("malformed marks")
    if not (isinstance(made, dict) and all(isinstance(k, str) and isinstance(v, int) and 0 <= v < n
                                           for k, v in made.items())):
        raise ValueError("malformed outputs")
    return [(m[0], m[1][:80]) for m in marks[:200]], dict(made)


def _answerer(kind):
    """The grading process's answers to the child's questions (the weight-mapping probe): a
    question that is not what a child of this grader asks is the attempt's doing (malformed)."""
    from attnprep.grader import sandbox

    def answer(question: dict) -> dict:
        try:
            return kind.answer(question)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise sandbox.Malformed(Words(f"unexpected question: {type(exc).__name__}", "sandbox.unexpected_question",
                                          type=type(exc).__name__)) from exc

    return answer


def _ended(exercise_id: str, path: Path, outcome, timeout: float, line: int = 0, source: str = "") -> Result:
    if outcome.failure == "timeout":
        lines = source.splitlines()
        if 0 < line <= len(lines):  # the line the attempt was running when it was stopped
            message = msg("error.timeout_at", seconds=timeout, line=line, code=lines[line - 1].strip())
        else:
            message = msg("error.timeout", seconds=timeout)
        return Result(exercise_id, str(path), Verdict.TIMEOUT, checks=(Check("runs", False, message),),
                      error=ErrorInfo("timeout", message))
    if outcome.failure in ("malformed", "reply_too_large"):
        message = msg(f"error.{outcome.failure}", detail=outcome.detail)
        return Result(exercise_id, str(path), Verdict.ERROR, checks=(Check("runs", False, message),),
                      error=ErrorInfo("reply", message))
    if outcome.failure == "answer_error":
        return Result(exercise_id, str(path), Verdict.ERROR, internal=True,
                      error=ErrorInfo("internal", msg("error.answer_error", detail=outcome.detail)))
    if outcome.failure == "signal":
        message = msg("error.signal", signal=outcome.detail)
        kind = "memory" if outcome.detail == "SIGKILL" else "crash"
    else:
        message = msg("error.exit", code=outcome.detail)
        kind = "exit"
    return Result(exercise_id, str(path), Verdict.ERROR, checks=(Check("runs", False, message),), error=ErrorInfo(kind, message))
