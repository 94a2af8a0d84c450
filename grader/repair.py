"""A branch the file's own setting chose: taken the other way, does the case come right?

The trail sees the steps that ran, never why they ran. A step the reference never does, run because a
setting of the file lets it (``if MaskKind.CAUSAL in self.mask_kinds:`` with the class attribute
``mask_kinds = MaskKind.PADDING | MaskKind.CAUSAL``), or a module picked by a setting (``(self.norm_1
if self.config.shared_attention_norm else self.norm_2)(x)`` with the dataclass field
``shared_attention_norm: bool = True``), is blamed where the step ran: the step is written right for
the other setting, and what a reviewer points at is the setting. Syntax alone cannot tell that from a
branch whose own code is wrong; running it can.

When the finder's line is inside an ``if`` (or holds a conditional expression) whose test reads no
tensor, no parameter of its function and calls nothing (``self.<setting>``, enum members, module
constants), and the one setting it reads from ``self`` is defined on another line of the file (a class
attribute, a dataclass field's default, the literal of ``self.x = ...``: :mod:`.defined` follows it,
across hand-ons) that the grader does not pass, a child forked like the trace child (the same sandbox,
a short time limit) traces the case again on a copy of the file whose test is negated (``not (…)``, on
its own line: every other line as written). When every output of the case then equals the reference's
within the case's tolerance, the setting's line is said (reason ``flag_runs``). Else, or when the
child raises, runs out of its time or sends back anything malformed, the finder's line stands (a
child a loaded machine starved of its CPU time: no line at all, see ``sandbox.Starved``).

The same repair, run on other choices the trail never sees (each its own function below, each asked only
when the ones before it said nothing): a module attribute built and never read whose twin, built by the
same call, is read where it belongs (:func:`twin_read`); an enum's members numbered the other way round
(:func:`enum_order`); two neighbouring stages of one value in the other order (:func:`stage_order`). Each
forks one child (its copies traced in turn) only when its precondition holds on a failing grade, which a
sample of 88 corpus files never met (see benchmarks/README.md, lines15).
"""

from __future__ import annotations

import ast
import functools
import os
import re
import tempfile
from pathlib import Path

import torch

from attnprep.grader.found import Found, tensor_of
from attnprep.grader.defined import _File
from attnprep.grader.parsing import defaults, kept_for, last_name, named_functions, parsed, walk


def _ours_none(repair):
    """``repair``, where any exception of ours is None (raised under ATTNPREP_DEBUG): a repair is a
    help on top of the finder's line, never a reason for it to fail."""
    @functools.wraps(repair)
    def guarded(*args, **kwargs):
        try:
            return repair(*args, **kwargs)
        except Exception:  # noqa: BLE001
            if os.environ.get("ATTNPREP_DEBUG"):
                raise
            return None

    return guarded


CHILD_SECONDS = 3.0  # the child's time (tracing the case again), at most the grade's timeout
MAX_TESTS = 2  # tests asked about (the innermost first); one child runs the first that qualifies
# what the finder says of a value the branch made (a step's values), not of a line said for another reason
REASONS = frozenset({"values", "made", "incomplete", "input", "output", "short", "late", "twice", "scalar", "scaled",
                     "skipped", "guarded", "near", "layout"})
_OPS = (ast.BoolOp, ast.UnaryOp, ast.Compare, ast.Attribute, ast.Name, ast.Constant, ast.Load, ast.And, ast.Or, ast.Not,
        ast.In, ast.NotIn, ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.BitAnd, ast.BitOr, ast.BinOp, ast.Subscript)


@_ours_none
def setting_runs(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
                 source: str) -> tuple[int, str] | None:
    """(line, setting) when the branch ``found.line`` is under, taken the other way, makes the case's
    outputs right (see the module doc); else None. Any exception of ours is None."""
    return _setting_runs(found, t, path, kind, ci, ni, timeout, protect, source)


def candidates(source: str, line: int, given: frozenset[str] = frozenset()) -> list[tuple[ast.expr, int, str]]:
    """(test, the setting's defining line, the setting as written) of the tests that decide whether the
    statement on ``line`` runs or what it picks, innermost first: a conditional expression of the
    statement, then the ``if`` statements around it in its function. Only settled tests (see
    :func:`_settled`) whose one ``self`` setting is defined more than a line away."""
    from attnprep.grader import defined

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return []
    files = kept_for(_SETTINGS, tree, _Settings, defined.FILES_KEPT)
    stmt, func, cls = files.statement_at(line)
    if stmt is None or func is None:
        return []
    tests = [n.test for n in ast.walk(stmt) if isinstance(n, ast.IfExp)]
    if isinstance(stmt, ast.If) and stmt.test.lineno == line:  # said at the condition itself
        tests.insert(0, stmt.test)
    node = stmt
    while node in files.parent and files.parent[node] is not func:
        node = files.parent[node]
        if isinstance(node, ast.If):
            tests.append(node.test)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            break
    found = []
    for test in tests[:MAX_TESTS]:
        if test.lineno != test.end_lineno:
            continue
        constant = _constant_parameter(tree, func, test, given)
        if constant is not None:  # `kind == MaskKind.WINDOW` of `kind=DEFAULT_KIND`, never passed
            if abs(constant[0] - line) > 1:
                found.append((test, *constant))
            continue
        if cls is None or not _settled(test, func):
            continue
        settings = [n for n in ast.walk(test) if isinstance(n, ast.Attribute) and _self_chain(n, func)
                    and not isinstance(files.parent.get(n), ast.Attribute)]
        targets = {files.resolve(n, func, cls, defined.MAX_HOPS) or defined._init_default(files, n, func, cls, given)
                   for n in settings}  # (an ``__init__`` default no call in the file nor the grader passes)
        if len(settings) != 1 or len(targets) != 1 or None in targets:
            continue
        (target, _), = targets
        if abs(target - line) <= 1 or _given_default(tree, target, given):
            continue
        found.append((test, target, ast.unparse(settings[0])))
    return found


class _Settings(_File):
    """:mod:`.defined`'s reading of a file, where a setting may be any literal (a string, a bool, None),
    not only a number."""

    def _value(self, value, func, cls, hops):
        if isinstance(value, ast.Constant) and not isinstance(value.value, (bytes, complex)):
            return value.lineno, True
        return super()._value(value, func, cls, hops)

    def _attribute(self, cls, call, name, hops, called: bool = False):
        # a class attribute holding a literal that is no number (`kv_expand = "repeat"`): its line
        found = super()._attribute(cls, call, name, hops, called)
        if isinstance(found, tuple) and len(found) == 3 and found[0] == "value" and not called \
                and isinstance(found[1], ast.Constant):
            return self._value(found[1], None, cls, hops)
        return found


_SETTINGS: dict = {}  # id of a shared tree -> (it, its _Settings), as defined's


def _constant_parameter(tree: ast.Module, func, test: ast.expr, given: frozenset[str]) -> tuple[int, str] | None:
    """(the line, the name) of the module-level constant that ``test`` reads through the one parameter of
    ``func`` it reads, when that parameter defaults to the constant's name (``kind=DEFAULT_KIND``), no
    call of the file passes it and the grader does not, and the test reads nothing else but module
    names and literals (no call, no tensor arithmetic)."""
    params = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    read = [a.arg for a in params if a.arg in names]
    if len(read) != 1 or read[0] in given or any(not isinstance(n, _OPS) for n in ast.walk(test)):
        return None
    name = read[0]
    default = next((d for a, d in defaults(func) if a.arg == name), None)
    if not isinstance(default, ast.Name):
        return None
    assigned = [n for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name) and n.targets[0].id == default.id]
    module = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)} \
        | {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    if len(assigned) != 1 or names - {name} - module:
        return None
    if _passed(tree, func, next(a for a in params if a.arg == name)):
        return None
    return assigned[0].lineno, default.id


def _self_chain(node: ast.Attribute, func) -> bool:
    from attnprep.grader import defined

    chain = defined._chain(node)
    return chain is not None and len(chain) >= 2 and chain[0] == defined._first_arg(func)


def _settled(test: ast.expr, func) -> bool:
    """A test that reads settings only: no call, no parameter of its function but ``self``, no local
    of it (what the caller or the inputs decide is not the file's setting), no tensor arithmetic."""
    from attnprep.grader import defined

    me = defined._first_arg(func)
    params = {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs} - {me}
    for node in ast.walk(test):
        if not isinstance(node, _OPS):
            return False
        if isinstance(node, ast.Name) and (node.id in params or (node.id != me and defined._assigns(func, node.id))):
            return False
    return True


def _given_default(tree: ast.Module, line: int, given: frozenset[str]) -> bool:
    """``line`` holds the default of a parameter the grader passes (the user's setting, not the file's)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(d.lineno == line and p.arg in given for p, d in defaults(node)):
                return True
    return False


def _spliced(source: str, line: int, start: int, end: int, text) -> str:
    """``source`` with the bytes ``start:end`` of its line ``line`` (ast's UTF-8 offsets) replaced by
    ``text(what was there)``, every other line as it was."""
    lines = source.splitlines(keepends=True)
    raw = lines[line - 1].encode("utf-8")
    lines[line - 1] = (raw[:start] + text(raw[start:end]).encode("utf-8") + raw[end:]).decode("utf-8")
    return "".join(lines)


def negated(source: str, test: ast.expr) -> str:
    """``source`` with ``test`` (on one line) written ``(not (…))``, every other line as it was."""
    return _spliced(source, test.lineno, test.col_offset, test.end_col_offset,
                    lambda was: "(not (" + was.decode("utf-8") + "))")


def _setting_runs(found, t, path: Path, kind, ci: int, ni: int, timeout: float, protect, source: str):
    if found is None or found.reason not in REASONS or not t.reference or not t.ref_made:
        return None
    tests = candidates(source, found.line, frozenset(kind.config_params(ci)))
    if not tests:
        return None
    test, target, setting = tests[0]
    steps, made = _run(path, negated(source, test), kind, ci, ni, min(timeout, CHILD_SECONDS), protect) or ((), {})
    if not made or not _right(steps, made, t, kind.cases(ci)[ni].tolerance):
        return None
    return target, setting


def _right(steps, made: dict[str, int], t, tol) -> bool:
    """Every output of the reference's is made by the run, of its shape, within ``tol`` of it."""
    from attnprep.grader.found import ATOL, RTOL

    rtol, atol = tol or (RTOL, ATOL)
    for name, at in t.ref_made.items():
        ref = tensor_of(t.reference[at])
        mine = tensor_of(steps[made[name]]) if name in made else None
        if ref is None or mine is None or mine.shape != ref.shape:
            return False
        if not torch.isclose(mine.double(), ref.double(), rtol=rtol, atol=atol, equal_nan=True).all():
            return False
    return True


def _already_right(t, kind, ci: int, ni: int) -> bool:
    """The attempt's own outputs on the case are the reference's (:func:`_right`): what fails is not their
    values (a dtype), so any edit "mends" the case and none says where it goes wrong."""
    return _right(t.attempt, t.made, t, kind.cases(ci)[ni].tolerance)


def _run(path: Path, text: str, kind, ci: int, ni: int, seconds: float, protect):
    """(steps, outputs) of the case traced on ``text`` written as a file of ``path``'s name, or None."""
    runs = _runs(path, [text], kind, ci, ni, seconds, protect)
    return runs[0] if runs else None


def _runs(path: Path, texts: list[str], kind, ci: int, ni: int, seconds: float, protect) -> list:
    """Per text, (output steps, outputs) of the case traced on it written as a file of ``path``'s name (each
    in a folder of its own), all in one child; None for a run that sent back nothing usable; [] when the
    child did not answer."""
    from attnprep.grader import child, engine, sandbox

    forget = child.reference_modules()  # asked before the fork (see there)
    with tempfile.TemporaryDirectory(prefix="attnprep-repair-") as tmp:
        copies = []
        for i, text in enumerate(texts):
            copy = Path(tmp) / str(i) / path.name
            copy.parent.mkdir()
            copy.write_text(text, encoding="utf-8")
            copies.append(copy)
        outcome = sandbox.run_help(lambda channel: _traced(copies, kind, ci, ni, channel, protect, forget), seconds,
                                   answer=engine._answerer(kind))
    data = outcome.data
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        return []
    return [_outputs_of(run) for run in data["runs"][:len(texts)]]


def _mending(edits: list[tuple], t, path: Path, kind, ci: int, ni: int, timeout: float, protect) -> list[tuple]:
    """The edits (tuples whose third item is the edited copy of the file) whose copy, traced on the case
    (all in one child, at most :data:`CHILD_SECONDS`), makes every output the reference's (:func:`_right`)."""
    runs = _runs(path, [e[2] for e in edits], kind, ci, ni, min(timeout, CHILD_SECONDS), protect)
    tol = kind.cases(ci)[ni].tolerance
    return [e for e, run in zip(edits, runs) if run is not None and run[1] and _right(run[0], run[1], t, tol)]


def _outputs_of(run):
    from attnprep.grader import engine
    from attnprep.grader.trace import Step

    if not isinstance(run, dict) or not isinstance(run.get("steps"), list):
        return None
    try:  # what the attempt's process sends is checked, never trusted
        steps = [Step.from_data(s) for s in run["steps"]]
        _, made = engine._trail_extras(run, len(steps))
    except (TypeError, ValueError, AttributeError, KeyError):
        return None
    return steps, made


def _traced(copies: list[Path], kind, ci: int, ni: int, channel, protect, forget) -> dict:
    """In the forked child: each copy traced on the case, only the steps of its outputs kept."""
    from attnprep.grader import child

    runs = []
    for copy in copies:
        # the outputs' steps carry the outputs as the call returned them (one made empty and filled by slices)
        data = child.trace_attempt(copy, kind, ci, ni, channel, protect, forget, finals=True)
        made = data.get("outputs") or {}
        steps = data.get("steps") or []
        kept = {name: i for i, name in enumerate(made)}
        runs.append({"steps": [steps[at] for at in made.values()], "outputs": kept})
    return {"runs": runs}

# -- a module read where its twin belongs --------------------------------------------------------------

TWIN_REASONS = REASONS | frozenset({"given", "given_made", "role", "stages_listed"})


@_ours_none
def twin_read(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
              source: str) -> tuple[int, str] | None:
    """(line, read) of the read of a module attribute that, given its twin instead, makes the case's outputs
    right (see :func:`twins`); else None. Any exception of ours is None."""
    return _twin_read(found, t, path, kind, ci, ni, timeout, protect, source)


def twins(source: str) -> list[tuple[ast.Attribute, str]]:
    """(read, twin) of a class of the file with a module attribute that nothing reads (``self.ffn_norm =
    RMSNorm(d, eps)``, built and never used) and one twin built by the same call (``self.attn_norm =
    RMSNorm(d, eps)``) that is read more than once: the last of those reads in the file's order, the one a
    copied line most likely left unchanged (``SublayerConnection(self.attn_norm)`` twice). A human points
    at the read that should be the unused twin; which one it is, only running can tell."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return []
    found = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        built: dict[str, list[str]] = {}
        reads: dict[str, list[ast.Attribute]] = {}
        for method in (m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))):
            me = method.args.args[0].arg if method.args.args else None
            for node in ast.walk(method):
                if isinstance(node, ast.Assign) and method.name == "__init__" and isinstance(node.value, ast.Call):
                    for target in node.targets:
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
                            built.setdefault(target.attr, []).append(ast.dump(node.value))
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) \
                        and node.value.id == me:
                    reads.setdefault(node.attr, []).append(node)
        made = {name: calls[0] for name, calls in built.items() if len(calls) == 1}
        for unused in (n for n in made if n not in reads):
            alike = [n for n in made if n != unused and made[n] == made[unused] and len(reads.get(n, ())) > 1]
            if len(alike) == 1:
                last = max(reads[alike[0]], key=lambda n: (n.lineno, n.col_offset))
                found.append((last, unused))
    return found


def _swapped(source: str, read: ast.Attribute, twin: str) -> str:
    """``source`` with the attribute of ``read`` (``self.attn_norm``, on one line) renamed ``twin``."""
    end = read.end_col_offset
    return _spliced(source, read.end_lineno, end - len(read.attr.encode("utf-8")), end, lambda _: twin)


def _twin_read(found, t, path: Path, kind, ci: int, ni: int, timeout: float, protect, source: str):
    if found is None or found.reason not in TWIN_REASONS or not t.reference or not t.ref_made:
        return None
    pairs = twins(source)
    if len(pairs) != 1:
        return None
    (read, twin), = pairs
    if abs(read.end_lineno - found.line) <= 1:
        return None  # said already
    steps, made = _run(path, _swapped(source, read, twin), kind, ci, ni, min(timeout, CHILD_SECONDS), protect) or ((), {})
    if not made or not _right(steps, made, t, kind.cases(ci)[ni].tolerance):
        return None
    return read.end_lineno, ast.unparse(read)


# -- an enum's members numbered in the wrong order -----------------------------------------------------

ENUM_BASES = frozenset({"Enum", "IntEnum", "Flag", "IntFlag"})
MAX_MEMBERS = 4  # members of one enum whose values are swapped two at a time (at most 6 runs, one child)


def enum_swaps(source: str) -> list[tuple[int, int, str, str]]:
    """(line, line, text with the two members' values swapped, "Enum.A, Enum.B") for every pair of members of
    the file's one enum numbered by distinct integer literals, each on a line of its own (``K = 0``), when the
    file reads at least two of them (``Part.Q``): the enum picks slots or an order by its numbers, which the
    trail never sees."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return []
    enums = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in cls.bases}
        if not bases & ENUM_BASES:
            continue
        members = [n for n in cls.body if isinstance(n, ast.Assign) and len(n.targets) == 1
                   and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Constant)
                   and type(n.value.value) is int]
        values = [m.value.value for m in members]
        lines = [m.lineno for m in members]
        if 2 <= len(members) <= MAX_MEMBERS and len(set(values)) == len(values) and len(set(lines)) == len(lines):
            enums.append((cls, members))
    if len(enums) != 1:
        return []
    cls, members = enums[0]
    names = {m.targets[0].id for m in members}
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == cls.name and n.attr in names}
    if len(read) < 2:
        return []
    found = []
    for i, a in enumerate(members):
        for b in members[i + 1:]:
            text = _literal_set(_literal_set(source, a.value, b.value.value), b.value, a.value.value)
            found.append((a.lineno, b.lineno, text, f"{cls.name}.{a.targets[0].id}, {cls.name}.{b.targets[0].id}"))
    return found


def _literal_set(source: str, node: ast.Constant, value: int) -> str:
    """``source`` with the literal ``node`` (on one line) written as ``value``."""
    return _spliced(source, node.lineno, node.col_offset, node.end_col_offset, lambda _: str(value))


@_ours_none
def enum_order(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
               source: str) -> tuple[int, str] | None:
    """(line, members) of the first of two enum members whose numbers, swapped, make the case's outputs
    right (see :func:`enum_swaps`; when several swaps do, the member all of them move); else None. Any
    exception of ours is None."""
    if found is None or found.reason not in TWIN_REASONS or not t.reference or not t.ref_made:
        return None
    swaps = [s for s in enum_swaps(source) if min(abs(s[0] - found.line), abs(s[1] - found.line)) > 1]
    if not swaps:
        return None
    right = _mending(swaps, t, path, kind, ci, ni, timeout, protect)
    if not right:
        return None
    # several swaps mend when a stage does nothing in this case (a temperature of 1): the member every
    # one of them moves is the one numbered wrong; none in common, the numbers do not decide
    common = set.intersection(*({s[0], s[1]} for s in right))
    if not common:
        return None
    line = min(common)
    if len(right) == 1:
        return line, right[0][3]
    first = next(s for s in right if line in s[:2])  # the member all of them move, alone
    return line, first[3].split(", ")[first[:2].index(line)]


# -- two stages written in the other order ---------------------------------------------------------------

MAX_ORDER_SWAPS = 4  # pairs of neighbouring stages tried (one child)


def stage_swaps(source: str) -> list[tuple[int, int, str, str]]:
    """(line, last line, text with the two statements swapped, what they change) for each pair of
    neighbouring statements of one block that are stages of one value: each (alone, or as the one statement
    of an ``if`` without ``else``) appends to the same name (``warpers.append(TopP(...))``) or gives a name a
    new value computed by a call from that name (``logits = top_k(logits, k)``), or is an ``if`` block that
    ends by changing a name from what it read of it (see :func:`_block_stage`). The order of such stages is
    data the trail never sees: it sees the stages that ran, each right."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return []
    own = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    found = []
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or isinstance(node, (ast.Module, ast.ClassDef)):
                continue
            for a, b in zip(block, block[1:]):
                sa, sb = _stage_of(a, own), _stage_of(b, own)
                if sa is not None and sa == sb and a.end_lineno < b.lineno:
                    found.append((a.lineno, b.end_lineno, _lines_swapped(source, a, b), sa))
    return found if len(found) <= MAX_ORDER_SWAPS else []


def _stage_of(stmt, own: set[str]) -> str | None:
    """The name a stage statement changes (see :func:`stage_swaps`), or None: an append of a call, or a
    new value made by calling a function of the file (``own``) on the name (a tensor method, ``masked_fill``,
    is no stage of the file's own: two masks filled in turn commute)."""
    if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) > 1:
        return _block_stage(stmt.body)
    if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1:
        stmt = stmt.body[0]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        if isinstance(f, ast.Attribute) and f.attr == "append" and isinstance(f.value, ast.Name) and stmt.value.args \
                and isinstance(stmt.value.args[0], ast.Call):
            return f.value.id
        return None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
            and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id in own:
        name = stmt.targets[0].id
        if any(isinstance(n, ast.Name) and n.id == name for n in stmt.value.args):
            return name
    return None


def _block_stage(body: list[ast.stmt]) -> str | None:
    """The name the block ``body`` (of an ``if`` without ``else``) ends by changing, from what it read of
    that name on the way: its last statement gives the name a new value computed from it, or changes
    it in place (``z.masked_fill_(drop, -inf)``), and an earlier statement reads it (``z.softmax(-1)``).
    A cut worked out from the values (a nucleus, a top-k) is such a stage: two of them in turn do not
    commute."""
    last = body[-1]
    name = _changed_in_place(last)
    if name is None and isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.targets[0], ast.Name):
        name = last.targets[0].id if _reads(last.value, last.targets[0].id) else None
    # (read by a statement that is no change of it in place: two masks filled in turn commute)
    if name is None or not any(_reads(s, name) for s in body[:-1] if _changed_in_place(s) != name):
        return None
    return name


def _changed_in_place(stmt: ast.stmt) -> str | None:
    """The name a statement ``name.method_(...)`` changes in place, or None."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute) \
            and isinstance(stmt.value.func.value, ast.Name) and stmt.value.func.attr.endswith("_") \
            and not stmt.value.func.attr.startswith("_"):
        return stmt.value.func.value.id
    return None


def _reads(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in walk(node))


def _lines_swapped(source: str, a: ast.stmt, b: ast.stmt) -> str:
    """``source`` with the lines of statement ``a`` and of the next statement ``b`` written in the other
    order (what lies between them, comments or blank lines, kept in between)."""
    lines = source.splitlines(keepends=True)
    first, mid, last = lines[a.lineno - 1:a.end_lineno], lines[a.end_lineno:b.lineno - 1], lines[b.lineno - 1:b.end_lineno]
    return "".join(lines[:a.lineno - 1] + last + mid + first + lines[b.end_lineno:])


@_ours_none
def stage_order(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
                source: str) -> tuple[int, str] | None:
    """(line, name) of the first of two neighbouring stages whose order, swapped, makes the case's outputs
    right, when exactly one swap does (see :func:`stage_swaps`); else None. Any exception of ours is None."""
    if found is None or found.reason not in TWIN_REASONS or not t.reference or not t.ref_made:
        return None
    swaps = [s for s in stage_swaps(source) if not s[0] <= found.line <= s[1]]  # (inside one: said already)
    if not swaps:
        return None
    right = _mending(swaps, t, path, kind, ci, ni, timeout, protect)
    return (right[0][0], right[0][3]) if len(right) == 1 else None


# what a finder says inside a helper whose one call hands it a literal: a value (or a Python number) made there
ARGUMENT_REASONS = REASONS | frozenset({"made_python", "raised"})


def argument_edits(source: str, line: int) -> list[tuple[int, str, str, str, str]]:
    """(the call's line, the parameter, the copy of ``source``, the reason, the function) for each literal
    argument of the one call of the file's function that holds ``line`` (in its body), written on one
    line: a keyword given a literal for a parameter whose default is another (the copy leaves it out:
    "default_overridden"), a bool literal, by keyword or position (the copy turns it: "given_flag"), and
    a parameter left to its default while a parameter of the calling function is never read (the copy
    passes it there: "unread_left")."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return []
    helpers = [n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
               and n.body[0].lineno <= line <= (n.end_lineno or n.lineno)]
    if not helpers:
        return []
    helper = max(helpers, key=lambda n: n.lineno)  # the innermost
    calls = [c for c in walk(tree) if isinstance(c, ast.Call) and (
        (isinstance(c.func, ast.Name) and c.func.id == helper.name)
        or (isinstance(c.func, ast.Attribute) and c.func.attr == helper.name and isinstance(c.func.value, ast.Name)
            and c.func.value.id in ("self", "cls")))]
    if len(calls) != 1:
        return []
    call = calls[0]
    if call.lineno != call.end_lineno or helper.lineno <= call.lineno <= (helper.end_lineno or helper.lineno):
        return []
    given = {a.arg: d for a, d in defaults(helper)}
    positional = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
    if isinstance(call.func, ast.Attribute) and positional[:1] in (["self"], ["cls"]):
        positional = positional[1:]
    edits = []

    def whole(new_call) -> str:
        return _spliced(source, call.lineno, call.col_offset, call.end_col_offset, lambda was: ast.unparse(new_call))

    def turned(node) -> str:
        return _spliced(source, node.lineno, node.col_offset, node.end_col_offset, lambda was: str(not node.value))

    for kw in call.keywords:
        if kw.arg is None or not isinstance(kw.value, ast.Constant):
            continue
        if isinstance(kw.value.value, bool):
            edits.append((call.lineno, kw.arg, turned(kw.value), "given_flag", helper.name))
        elif kw.arg in given and ast.dump(given[kw.arg]) != ast.dump(kw.value):
            left = ast.Call(func=call.func, args=call.args, keywords=[k for k in call.keywords if k is not kw])
            edits.append((call.lineno, kw.arg, whole(left), "default_overridden", helper.name))
    for name, arg in zip(positional, call.args):
        if isinstance(arg, ast.Starred):
            break
        if isinstance(arg, ast.Constant) and isinstance(arg.value, bool):
            edits.append((call.lineno, name, turned(arg), "given_flag", helper.name))
    # a parameter left to its default while the calling function's own parameter is never read: passed
    caller = max((n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                  and n.body[0].lineno <= call.lineno <= (n.end_lineno or n.lineno)), key=lambda n: n.lineno, default=None)
    if caller is not None and not any(isinstance(a, ast.Starred) for a in call.args):
        loaded = {n.id for n in ast.walk(caller) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        unread = [a.arg for a in (*caller.args.posonlyargs, *caller.args.args, *caller.args.kwonlyargs)
                  if a.arg not in loaded and a.arg not in ("self", "cls")]
        passed = set(positional[:len(call.args)]) | {k.arg for k in call.keywords}
        for name in [p for p in given if p not in passed]:
            for value in unread:
                more = ast.Call(func=call.func, args=call.args,
                                keywords=[*call.keywords, ast.keyword(arg=name, value=ast.Name(id=value, ctx=ast.Load()))])
                edits.append((call.lineno, name, whole(more), "unread_left", helper.name))
    return edits


@_ours_none
def call_argument(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
                  source: str) -> tuple[int, str, str, str] | None:
    """(line, parameter, reason, function) of the one literal argument of a helper's one call that, left
    to the parameter's default or turned (a bool), makes the case's outputs right, when exactly one edit
    of :func:`argument_edits` does; else None. Any exception of ours is None."""
    if found is None or found.reason not in ARGUMENT_REASONS or not t.reference or not t.ref_made:
        return None
    edits = argument_edits(source, found.line)
    if not edits:
        return None
    right = _mending(edits, t, path, kind, ci, ni, timeout, protect)
    return (right[0][0], right[0][1], right[0][3], right[0][4]) if len(right) == 1 else None


def key_swaps(source: str) -> list[tuple[int, str, str, str]]:
    """(line, the table's name, the copy of ``source``, the key put there) for each string literal of the
    file that is a key of a dict literal the file reads by a variable key (``ACTIVATIONS[name]``,
    ``states[name]``), written apart from the dict and not itself a subscript (a default, an entry
    of a tuple of names, an argument), replaced by each other key of that dict."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return []
    tables = {}  # name -> its string keys, for dicts assigned to one name and read by a variable key
    looked_up = {n.value.id for n in walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
                 and isinstance(n.slice, ast.Name)}
    own = set()  # the dicts' own key nodes
    for node in walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Dict) and node.targets[0].id in looked_up:
            keys = [k for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if len(keys) >= 2 and len(keys) == len(node.value.keys):
                tables[node.targets[0].id] = [k.value for k in keys]
                own.update(id(k) for k in keys)
    if not tables:
        return []
    subscripted = {id(n.slice) for n in walk(tree) if isinstance(n, ast.Subscript)}
    swaps = []
    for node in walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in own \
                or id(node) in subscripted or node.lineno != node.end_lineno:
            continue
        for name, keys in tables.items():
            if node.value not in keys:
                continue
            for other in keys:
                if other != node.value:
                    swaps.append((node.lineno, name, _spliced(source, node.lineno, node.col_offset, node.end_col_offset,
                                                              lambda was, o=other: repr(o)), other))
    return swaps


@_ours_none
def key_chosen(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
               source: str) -> tuple[int, str, str] | None:
    """(line, table, key) of the one key literal of :func:`key_swaps` whose replacement by another key of its
    table makes the case's outputs right, when exactly one replacement does; else None. Any exception of
    ours is None."""
    if found is None or found.reason not in TWIN_REASONS | {"table_entry", "table_key"} or not t.reference \
            or not t.ref_made:
        return None
    swaps = [s for s in key_swaps(source) if s[0] != found.line]
    if not swaps or len(swaps) > MAX_KEY_SWAPS:
        return None
    right = _mending(swaps, t, path, kind, ci, ni, timeout, protect)
    return (right[0][0], right[0][1], right[0][3]) if len(right) == 1 else None


MAX_KEY_SWAPS = 12  # copies traced in one child at most


def entry_swaps(source: str) -> list[tuple[int, str, str]]:
    """(line, the list's name, the copy of ``source``) for each two neighbouring entries of a list or tuple
    literal, assigned to one name and written on one line, that a ``for`` loop of the file runs through
    (``FILTERS = [("top_p", top_p), ("top_k", top_k)]`` … ``for name, f in FILTERS:``), the two swapped."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return []
    looped = {last_name(n.iter) for n in walk(tree) if isinstance(n, ast.For)} - {None}
    swaps = []
    for node in walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and last_name(node.targets[0]) in looped
                and isinstance(node.value, (ast.List, ast.Tuple)) and len(node.value.elts) >= 2
                and node.value.lineno == node.value.end_lineno):
            continue
        items = node.value.elts
        if any(isinstance(e, ast.Starred) for e in items):
            continue
        for a, b in zip(items, items[1:]):
            text = ast.get_source_segment(source, a), ast.get_source_segment(source, b)
            if None in text:
                continue
            copy = _spliced(source, a.lineno, a.col_offset, b.end_col_offset, lambda was, text=text: _swapped_ends(
                was.decode("utf-8"), *text))
            if copy != source:
                swaps.append((node.lineno, last_name(node.targets[0]), copy))
    return swaps


def _swapped_ends(span: str, first: str, last: str) -> str:
    """``span`` (``first``, what lies between, ``last``) with its two ends swapped; as it was if it does not
    read so."""
    if not (span.startswith(first) and span.endswith(last)) or len(first) + len(last) > len(span):
        return span
    return last + span[len(first):len(span) - len(last)] + first


@_ours_none
def entry_order(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
                source: str) -> tuple[int, str] | None:
    """(line, name) of the list whose two neighbouring entries, swapped, make the case's outputs right, when
    exactly one swap of :func:`entry_swaps` does; else None. Any exception of ours is None."""
    if found is None or found.reason not in TWIN_REASONS or not t.reference or not t.ref_made:
        return None
    swaps = [s for s in entry_swaps(source) if s[0] != found.line]
    if not swaps or len(swaps) > MAX_KEY_SWAPS:
        return None
    right = _mending(swaps, t, path, kind, ci, ni, timeout, protect)
    return (right[0][0], right[0][1]) if len(right) == 1 else None


# -- a default that differs from the reference's -------------------------------------------------------

MAX_DEFAULTS = 4  # differing defaults tried (one child)


def _literal(node: ast.expr):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _literal  # not a literal: nothing to compare


def default_swaps(source: str, ref_source: str, given: frozenset[str] = frozenset()) -> list[tuple[int, str, str]]:
    """(line, parameter, the source with the reference's default there) for each parameter of a function
    both files define by the same name (``f`` or ``Class.method``) whose default is a literal (a number, a
    bool, a string, None) other than the reference's literal default of that parameter, written on one line;
    parameters the grader passes (``given``) left out: their default is never used."""
    mine, theirs = dict(named_functions(parsed(source))), dict(named_functions(parsed(ref_source)))
    swaps = []
    for name, function in mine.items():
        if name not in theirs:
            continue
        reference = {p.arg: d for p, d in defaults(theirs[name])}
        for p, d in defaults(function):
            ref = reference.get(p.arg)
            if ref is None or p.arg in given or d.lineno != d.end_lineno:
                continue
            a, b = _literal(d), _literal(ref)
            if a is _literal or b is _literal or type(a) is not type(b) and not {type(a), type(b)} <= {int, float} or a == b:
                continue
            text = ast.get_source_segment(ref_source, ref)
            if text is None or "\n" in text:
                continue
            swaps.append((d.lineno, p.arg, _spliced(source, d.lineno, d.col_offset, d.end_col_offset, lambda was, t=text: t)))
    return swaps[:MAX_DEFAULTS]


@_ours_none
def default_differs(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
                    source: str, ref_source: str) -> tuple[int, str] | None:
    """(line, parameter) of a parameter's default that differs from the reference's default of the same
    parameter of the same function (see :func:`default_swaps`) when, with the reference's default written
    there instead, the case's outputs come out right (the one such default, when several differ); else
    None. The grader leaves such a parameter to its default (``temperature`` of a sampling function, a
    module's ``rope_theta``): the trail sees the steps that read it, never where its value was typed.
    Asked whatever the finder's reason (a helper's call that reads the parameter, a line that raised): the
    run, right with the reference's default alone, decides. Any exception of ours is None."""
    if found is None or not t.reference or not t.ref_made:
        return None
    swaps = [s for s in default_swaps(source, ref_source, frozenset(kind.config_params(ci))) if abs(s[0] - found.line) > 1]
    if not swaps:
        return None
    right = _mending(swaps, t, path, kind, ci, ni, timeout, protect)
    return (right[0][0], right[0][1]) if len(right) == 1 else None

# -- an integer setting one off ---------------------------------------------------------------------

MAX_NUDGES = 8  # edits tried (one child): two per setting


def _int_literal(node: ast.expr) -> int | None:
    """The integer a literal spells (``3``, ``-2``), never a bool; else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_literal(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _passed(tree: ast.Module, function, param: ast.arg) -> bool:
    """Some call of the file names ``function`` and hands it ``param``: by keyword, positionally, or
    through ``*args`` / ``**kwargs``. A call through an attribute (``self.f(...)``, ``obj.f(...)``) binds
    a first parameter named ``self`` / ``cls`` itself; a call by bare name passes every positional."""
    positional = [*function.args.posonlyargs, *function.args.args]
    index = positional.index(param) if param in positional else None
    for call in walk(tree):
        if not isinstance(call, ast.Call) or last_name(call.func) != function.name:
            continue
        if any(k.arg in (param.arg, None) for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
            return True
        bound = 1 if isinstance(call.func, ast.Attribute) and positional and positional[0].arg in ("self", "cls") else 0
        if index is not None and len(call.args) > index - bound:
            return True
    return False


def setting_nudges(source: str, line: int, given: frozenset[str] = frozenset()) -> list[tuple[int, str, str]]:
    """(line, setting, the source with its integer one more or one less) for each integer setting the
    statement on ``line`` reads, typed on another line: a parameter of its function whose literal default no
    call of the file passes (nor the grader: ``given``), a class attribute read as ``self.X`` / ``Cls.X`` and
    set to a literal in its class body, a module constant ``X = <int>`` read by name, or a module ``X =
    <call>(..., default=<int>)`` read as ``X.get()`` (a ``contextvars.ContextVar``)."""
    tree = parsed(source)
    files = _File(tree)
    stmt, func, cls = files.statement_at(line)
    if stmt is None:
        return []
    module: dict[str, ast.expr] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) and node.value else []
        for target in targets:
            if isinstance(target, ast.Name):
                module[target.id] = node.value
    found: dict[tuple[int, int], tuple[str, ast.expr]] = {}

    def take(name: str, literal: ast.expr | None):
        if literal is not None and _int_literal(literal) is not None and literal.lineno == literal.end_lineno \
                and abs(literal.lineno - line) > 1:
            found.setdefault((literal.lineno, literal.col_offset), (name, literal))

    params = {p.arg: (p, d) for p, d in defaults(func)} if func is not None else {}
    own = {}
    if cls is not None:
        for node in cls.body:
            if isinstance(node, ast.Assign):
                own.update((t.id, node.value) for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                own[node.target.id] = node.value
    for node in walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in params and node.id not in given and not _passed(tree, func, params[node.id][0]):
                take(node.id, params[node.id][1])
            elif node.id not in params and node.id in module:
                take(node.id, module[node.id])
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and cls is not None \
                and node.value.id in ("self", "cls", cls.name) and node.attr in own:
            take(node.attr, own[node.attr])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and not node.args and isinstance(node.func.value, ast.Name) and isinstance(module.get(node.func.value.id), ast.Call):
            made = module[node.func.value.id]
            take(node.func.value.id, next((k.value for k in made.keywords if k.arg == "default"), None))
    edits = []
    for (lineno, _), (name, literal) in sorted(found.items()):
        value = _int_literal(literal)
        for nudged in (value + 1, value - 1):
            text = _spliced(source, lineno, literal.col_offset, literal.end_col_offset, lambda was, n=nudged: str(n))
            edits.append((lineno, name, text))
    return edits[:MAX_NUDGES]


@_ours_none
def setting_off_by_one(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
                       source: str) -> tuple[int, str] | None:
    """(line, setting) of the integer setting the finder's line reads (see :func:`setting_nudges`) that,
    written one more or one less, makes the case's outputs right: the only such setting; else None. A
    diagonal offset, an axis, a count or an index chosen one off is typed where the setting is set, and the
    trail sees only the step that reads it. Any exception of ours is None."""
    if found is None or found.reason not in REASONS or not t.reference or not t.ref_made or _already_right(t, kind, ci, ni):
        return None
    edits = setting_nudges(source, found.line, frozenset(kind.config_params(ci)))
    if not edits:
        return None
    right = {(e[0], e[1]) for e in _mending(edits, t, path, kind, ci, ni, timeout, protect)}
    return next(iter(right)) if len(right) == 1 else None


# -- two values of a table given to each other's keys ---------------------------------------------

MAX_VALUE_SWAPS = 12  # copies traced in one child at most


def value_swaps(source: str) -> list[tuple[int, str, str]]:
    """(line, the table's name, the copy of ``source``) for each pair of values of a dict literal assigned to one
    name and read by a variable key (``RESOLVERS[field]``, ``SLOTS[name]``), whose keys are all strings and
    whose values are all literals (strings or numbers) written each on one line, swapped; said at the first of
    the two values' lines."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return []
    looked_up = {n.value.id for n in walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
                 and isinstance(n.slice, ast.Name)}
    swaps = []
    for node in walk(tree):
        if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name) or targets[0].id not in looked_up:
            continue
        keys, values = node.value.keys, node.value.values
        if len(values) < 2 or not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys) \
                or not all(isinstance(v, ast.Constant) and type(v.value) in (str, int, float) and v.lineno == v.end_lineno
                           for v in values):
            continue
        for i, a in enumerate(values):
            for b in values[i + 1:]:
                if a.value == b.value:
                    continue
                first, second = sorted((a, b), key=lambda v: (v.lineno, v.col_offset))
                text = _spliced(source, second.lineno, second.col_offset, second.end_col_offset, lambda was, v=first: repr(v.value))
                text = _spliced(text, first.lineno, first.col_offset, first.end_col_offset, lambda was, v=second: repr(v.value))
                swaps.append((first.lineno, targets[0].id, text))
    return swaps


@_ours_none
def values_swapped(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
                   source: str) -> tuple[int, str] | None:
    """(line, table) of the one pair of values of :func:`value_swaps` whose swap makes the case's outputs right,
    when exactly one swap does; else None. A table that gives the gate's layer to the up branch and the up
    branch's to the gate is right entry by entry as a reviewer reads it, wrong as a pair: the trail sees the
    steps that read it. Any exception of ours is None."""
    if found is None or found.reason not in TWIN_REASONS | {"table_entry", "table_key"} or not t.reference \
            or not t.ref_made:
        return None
    swaps = [s for s in value_swaps(source) if abs(s[0] - found.line) > 1]
    if not swaps or len(swaps) > MAX_VALUE_SWAPS:
        return None
    right = _mending(swaps, t, path, kind, ci, ni, timeout, protect)
    return (right[0][0], right[0][1]) if len(right) == 1 else None


# -- a plain Python number computed one off, or a size read from another axis -------------------------

NUMBER_HOPS = 3  # assignments followed back from the finder's statement, through the names it reads
MAX_NUMBER_EDITS = 12  # copies traced in one child at most
AXES = range(-4, 4)  # the axes a size read (``x.shape[k]``, ``x.size(k)``) is tried on instead


def _assigned(func) -> dict[str, list[ast.stmt]]:
    """Name -> the statements of ``func`` (not of a function inside it) that bind it: an assignment to it
    (alone or in a tuple) or a ``for`` loop over it."""
    bound: dict[str, list[ast.stmt]] = {}
    todo = list(func.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
            stmt, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    bound.setdefault(node.id, []).append(stmt)
        todo.extend(s for field in ("body", "orelse", "finalbody") for s in getattr(stmt, field, ()) or ())
        todo.extend(s for h in getattr(stmt, "handlers", ()) for s in h.body)
    return bound


def _number_part(stmt: ast.stmt) -> ast.expr | None:
    """What a binding statement computes: an assignment's value, a ``for`` loop's iterable."""
    return stmt.iter if isinstance(stmt, ast.For) else getattr(stmt, "value", None)


def _loaded(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _number_changes(source: str, value: ast.expr) -> list[tuple[str, str]]:
    """(the copy of ``source``, the line as changed) for each change of one integer literal of ``value``:
    the axis of a size read (``x.shape[0]``, ``x.size(1)``) to each other axis of :data:`AXES`, any other
    integer one up and one down."""
    axes = {id(n.slice) for n in ast.walk(value) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute)
            and n.value.attr == "shape"}
    axes |= {id(n.args[0]) for n in ast.walk(value) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "size" and len(n.args) == 1}
    negated = {id(n.operand) for n in ast.walk(value) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)}
    changes = []
    for node in ast.walk(value):
        number = _int_literal(node)
        if number is None or id(node) in negated:  # the literal of ``-1`` is changed as ``-1``
            continue
        tried = [k for k in AXES if k != number] if id(node) in axes else [number + 1, number - 1]
        for k in tried:
            copy = _spliced(source, node.lineno, node.col_offset, node.end_col_offset, lambda was, k=k: str(k))
            changes.append((copy, copy.splitlines()[node.lineno - 1].strip()))
    return changes


def _extents(node: ast.AST) -> set[str]:
    """The names ``node`` reads as an extent: in a slice's bounds, as an index (not of a ``.shape``), or as an
    argument of ``range``: where a number one off moves which elements, or how many, are taken."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Slice):
            found |= _loaded(n)
        elif isinstance(n, ast.Subscript) and not (isinstance(n.value, ast.Attribute) and n.value.attr == "shape"):
            found |= _loaded(n.slice)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range":
            found |= {m for a in n.args for m in _loaded(a)}
    return found


def _innermost(source: str, line: int) -> tuple[ast.FunctionDef | None, ast.stmt | None]:
    """(the innermost function whose body holds ``line``, the innermost statement of it there), or
    (…, None) when the file does not parse or no function's statement holds the line."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return None, None
    from attnprep.grader.engine import _holding

    func = _holding(tree, line)
    if func is None:
        return None, None
    around = [n for n in walk(func) if isinstance(n, ast.stmt) and n is not func
              and n.lineno <= line <= (n.end_lineno or n.lineno)]
    if not around:
        return func, None
    return func, min(around, key=lambda n: ((n.end_lineno or n.lineno) - n.lineno, -n.lineno))


def number_edits(source: str, line: int, traced: frozenset[int], name: str = "") -> list[tuple[int, str, str, str]]:
    """(line, the name it binds, the copy of ``source``, the line as changed) for each change of
    :func:`_number_changes` on the statements that compute plain Python numbers the statement at ``line``
    reads (and ``name``, the value the finder speaks of, when the statement is a test that guards it): the
    bindings, in its function and before it, of the names it reads, followed back
    :data:`NUMBER_HOPS` times through the names each reads, kept where the name is read as an extent
    (:func:`_extents`: a slice's bound, an index, ``range``'s argument; never a test's or a scale's
    operand, where a changed number would pick another branch or compensate another mistake), the
    statement is written on one line and no traced step ran on it (``half = x.shape[0] // 2``, ``kv_end = min(S, i + bq + 1)``, a
    loop's ``range(...)``); at most :data:`MAX_NUMBER_EDITS`, the nearest hops first."""
    func, statement = _innermost(source, line)
    if statement is None:
        return []
    bound = _assigned(func)
    if hasattr(statement, "body"):  # a compound statement's header: what its test, iterable or items read
        statement = ast.Tuple(elts=[n for n in (getattr(statement, "test", None), getattr(statement, "iter", None),
                                                *(i.context_expr for i in getattr(statement, "items", ()))) if n],
                              ctx=ast.Load())
    # (name, read as an extent): a number is changed only where it is read as an extent (see _extents)
    names = {(n, n in _extents(statement)) for n in _loaded(statement)} | ({(name, False)} if name.isidentifier() else set())
    seen, edits = set(), []
    for _ in range(NUMBER_HOPS):
        further: set[tuple[str, bool]] = set()
        for read, as_extent in sorted(names):
            for stmt in bound.get(read, ()):
                part = _number_part(stmt)
                if (id(stmt), as_extent) in seen or part is None or stmt.lineno >= line:
                    continue
                seen.add((id(stmt), as_extent))
                extents = _extents(part)
                further |= {(n, n in extents) for n in _loaded(part)}
                if not as_extent or part.lineno != part.end_lineno or part.lineno in traced:
                    continue
                edits.extend((part.lineno, read, copy, changed) for copy, changed in _number_changes(source, part))
        names = further
    return edits[:MAX_NUMBER_EDITS]


@_ours_none
def number_off(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
               source: str) -> tuple[int, str, str] | None:
    """(line, name, the line as changed) of the plain Python number (see :func:`number_edits`) that, one off
    or read from another axis, makes the case's outputs right, when the changes that do are all on one line
    more than a line from the finder's; else None. The trail records tensor operations, never the
    arithmetic of sizes and bounds: a slice's extent or a loop's bound computed one off is blamed where
    its tensors are used. Any exception of ours is None."""
    if found is None or found.reason not in REASONS or not t.reference or not t.ref_made:
        return None
    if _already_right(t, kind, ci, ni):
        return None
    traced = frozenset(s.line for s in t.attempt) | frozenset(n for s in t.attempt for n in s.stack)
    edits = [e for e in number_edits(source, found.line, traced, found.name) if abs(e[0] - found.line) > 1]
    if not edits:
        return None
    right = _mending(edits, t, path, kind, ci, ni, timeout, protect)
    return (right[0][0], right[0][1], right[0][3]) if len({e[0] for e in right}) == 1 else None


# -- a mask read the other way round ---------------------------------------------------------------

MAX_NEGATIONS = 12  # copies traced in one child at most
MASK_VIEWS = frozenset({"bool", "to", "unsqueeze", "view", "reshape", "expand", "expand_as", "contiguous", "squeeze"})
MASK_USES = frozenset({"masked_fill", "masked_fill_", "where"})  # a mask's first argument: what it is used for
MASK_CALLS = MASK_USES | frozenset({"logical_and", "logical_or", "logical_not", "logical_xor"})


def _masking(node: ast.AST) -> bool:
    """``node`` combines, negates or applies a boolean mask: ``|``, ``&``, ``~``, ``masked_fill``, ``where``,
    ``logical_*``."""
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.BitOr, ast.BitAnd)) \
                or isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Invert) \
                or isinstance(n, ast.Call) and last_name(n.func) in MASK_CALLS:
            return True
    return False


def _root(node: ast.expr) -> str | None:
    """The name an expression selects, views or converts (``attention_mask`` of
    ``attention_mask[:, None, None, :].bool()``, of ``(m == 0)``'s left side), or None."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MASK_VIEWS:
            node = node.func.value
        elif isinstance(node, ast.Compare):
            node = node.left
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            node = node.operand
        else:
            return None


def _negation_sites(value: ast.expr, given: set[str]) -> list[tuple[ast.expr, str]]:
    """(node, how) for each place ``value`` reads one of the masks ``given`` (its function's parameters),
    as it is or selected, viewed or compared, in a way that could be the other way round: a ``~m`` read as
    ``m`` ("drop"), ``m`` as an operand of ``|`` / ``&`` or as the value itself read as ``~(m)`` ("wrap"),
    ``m == 0`` read as ``m != 0`` and back ("flip"), ``m`` given to ``masked_fill`` / ``where`` read as
    ``~(m)`` ("use"). A conditional value's branches are each such a value, a ``None`` branch none. A
    mask the file derives itself (a causal band, an accumulator) is not its convention's entry: only
    the parameters are tried."""
    parts = [b for b in (value.body, value.orelse) if not (isinstance(b, ast.Constant) and b.value is None)] \
        if isinstance(value, ast.IfExp) else [value]
    sites = []
    given_here = lambda node: _root(node) in given  # noqa: E731
    for part in parts:
        if isinstance(part, (ast.Name, ast.Subscript)) or (
                isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and part.func.attr in MASK_VIEWS):
            if given_here(part):
                sites.append((part, "wrap"))
        for node in ast.walk(part):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
                if given_here(node.operand):
                    sites.append((node, "drop"))
            elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitOr, ast.BitAnd)):
                sites.extend((o, "wrap") for o in (node.left, node.right)
                             if not (isinstance(o, ast.UnaryOp) and isinstance(o.op, ast.Invert)) and given_here(o))
            elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
                if given_here(node):
                    sites.append((node, "flip"))
            elif isinstance(node, ast.Call) and last_name(node.func) in MASK_USES and node.args \
                    and not (isinstance(node.args[0], ast.UnaryOp) and isinstance(node.args[0].op, ast.Invert)) \
                    and given_here(node.args[0]):
                sites.append((node.args[0], "use"))
    return sites


def _negation_changes(source: str, value: ast.expr, given: set[str]) -> list[tuple[str, str, str]]:
    """(the copy of ``source``, the line as changed, how) for each site of :func:`_negation_sites` on one
    line."""
    changes = []
    for node, how in _negation_sites(value, given):
        if node.lineno != node.end_lineno:
            continue
        if how == "drop":
            inner = ast.get_source_segment(source, node.operand)
            if inner is None:
                continue
            text = lambda was, inner=inner: "(" + inner + ")"  # noqa: E731
        elif how == "flip":
            flipped = ast.Compare(left=node.left, ops=[ast.NotEq() if isinstance(node.ops[0], ast.Eq) else ast.Eq()],
                                  comparators=node.comparators)
            text = lambda was, flipped=flipped: "(" + ast.unparse(flipped) + ")"  # noqa: E731
        else:
            text = lambda was: "~(" + was.decode("utf-8") + ")"  # noqa: E731
        copy = _spliced(source, node.lineno, node.col_offset, node.end_col_offset, text)
        changes.append((copy, copy.splitlines()[node.lineno - 1].strip(), how))
    return changes


def negation_edits(source: str, line: int, name: str = "") -> list[tuple[int, str, str, str, str]]:
    """(line, the name it binds, the copy of ``source``, the line as changed, how) for each change of
    :func:`_negation_changes` (of the masks its function is given) on the statement at ``line`` when it
    combines, negates or applies a mask
    (:func:`_masking`; its name ``""``), then on the statements that bind the values it reads (and
    ``name``), in its function and before it, followed back :data:`NUMBER_HOPS` times through the names
    each reads, each written on one line and binding one name; at most :data:`MAX_NEGATIONS`, the
    nearest hops first. None when the statement does nothing with a mask."""
    func, statement = _innermost(source, line)
    if statement is None:
        return []
    read = getattr(statement, "test", None) if hasattr(statement, "body") else _number_part(statement)
    if read is None or not _masking(read):
        return []
    bound = _assigned(func)
    given = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)} - {"self", "cls"}
    edits = [(read.lineno, "", *change) for change in _negation_changes(source, read, given)] \
        if read.lineno == read.end_lineno else []
    names = _loaded(read) | ({name} if name.isidentifier() else set())
    seen = {id(statement)}
    for _ in range(NUMBER_HOPS):
        further: set[str] = set()
        for one in sorted(names):
            for stmt in bound.get(one, ()):
                part = _number_part(stmt)
                if id(stmt) in seen or part is None or stmt.lineno >= line:
                    continue
                seen.add(id(stmt))
                further |= _loaded(part)
                single = isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and all(
                    isinstance(t, ast.Name) for t in getattr(stmt, "targets", [getattr(stmt, "target", None)]))
                if single and part.lineno == part.end_lineno:
                    edits.extend((part.lineno, one, *change) for change in _negation_changes(source, part, given))
        names = further
    return edits[:MAX_NEGATIONS]


@_ours_none
def mask_negated(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
                 source: str) -> tuple[int, str, str] | None:
    """(line, name, the line as changed) of the earliest statement, more than a line before the finder's,
    where a boolean read the other way round (see :func:`negation_edits`) makes the case's outputs right,
    when one change there does and no change of the mask the finder's own statement applies does; else
    None. A mask written in the other convention (True = keep where True = masked is meant) has, where
    it is made, the values of the reference's mask in its own convention: the trail sees nothing wrong
    until it is combined with another or applied. Where the mask applied, read the other way round, mends
    the case, the finder's line is where the convention went wrong (or as good a place as any). Any
    exception of ours is None."""
    if found is None or found.reason not in REASONS or not t.reference or not t.ref_made:
        return None
    edits = negation_edits(source, found.line, found.name)
    if not any(abs(e[0] - found.line) > 1 for e in edits) or _already_right(t, kind, ci, ni):
        return None
    right = _mending(edits, t, path, kind, ci, ni, timeout, protect)
    if not right or any(e[4] == "use" and abs(e[0] - found.line) <= 1 for e in right):
        return None
    first = min(e[0] for e in right)
    at_first = [e for e in right if e[0] == first]
    if abs(first - found.line) <= 1 or len(at_first) != 1:
        return None
    return first, at_first[0][1], at_first[0][3]


# -- a value chosen in a literal: a document's entry, a table's value, a keyword's setting ---------------

MAX_LITERAL_EDITS = 24  # copies traced in one child at most
_TOKEN = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|[A-Za-z_][A-Za-z0-9_]*")
_FLIPS = {"True": "False", "False": "True", "true": "false", "false": "true", "yes": "no", "no": "yes", "on": "off",
          "off": "on"}
_INT = re.compile(r"-?\d+")


def _compared(tree: ast.Module) -> set[str]:
    """The string constants (names) the code compares a value with (``==``, ``!=``, ``in``)."""
    out: set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(o, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for o in node.ops):
            for side in (node.left, *node.comparators):
                elts = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                out.update(e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return {s for s in out if s.isidentifier()}


def _keyed(tree: ast.Module) -> list[set[str]]:
    """The keys of each dict literal the file assigns to a name and reads by a key it computes
    (``ACTIVATIONS[opts["act"]]``, ``widths[k]``)."""
    looked = {n.value.id for n in walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
              and not isinstance(n.slice, ast.Constant)}
    tables = []
    for node in walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in looked for t in targets):
                keys = {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                if len(keys) >= 2:
                    tables.append(keys)
    return tables


def _instead(word: str, compared: set[str], keyed: list[set[str]], valued: bool) -> list[str]:
    """The words tried in place of ``word``: the other keys of a table it is a key of, else the other
    strings the code compares with (and one none of them matches) when ``word`` is one of them, else, at a
    value's place in a document (``key = word``), the strings the code compares with."""
    for keys in keyed:
        if word in keys:
            return sorted(keys - {word})
    if word in compared:
        return sorted(compared - {word}) + ["not_" + word]
    return sorted(compared - {word}) if valued else []


def _value_sites(tree: ast.Module) -> list[tuple[ast.expr, str, bool, bool]]:
    """(literal, the name it sets, whether it is outside every function, whether it is a call's argument) of
    the values the file chooses: an assignment's value, a dict's value, a keyword argument's value (a
    decorator's, a field's, a ``super().__init__(...)``'s); a document (a string of several entries) also as
    a call's argument."""
    inside: set[int] = set()
    for node in walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(n) for n in walk(node) if n is not node)
    sites: list[tuple[ast.expr, str, bool, bool]] = []

    def named(target) -> str:
        try:
            return ast.unparse(target)[:60]
        except Exception:  # noqa: BLE001
            return "?"

    for node in walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            sites.append((node.value, named(targets[0]), id(node) not in inside, False))
            if isinstance(node.value, ast.Dict):
                for k, v in zip(node.value.keys, node.value.values):
                    key = repr(k.value) if isinstance(k, ast.Constant) else "?"
                    sites.append((v, f"{named(targets[0])}[{key}]", id(node) not in inside, False))
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg:
                    sites.append((kw.value, kw.arg, id(node) not in inside, True))
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _document(arg.value):
                    sites.append((arg, named(node.func), id(node) not in inside, True))
    return sorted(sites, key=lambda s: (not s[2], s[0].lineno))  # outside functions first


def _document(text: str) -> bool:
    """A string of several entries (a CSV, an INI or TOML document, a spec or an options line)."""
    return "\n" in text.strip() or any(sep in text for sep in ("=", ":", ",", "--")) and len(_TOKEN.findall(text.encode())) >= 2


def _number(node: ast.expr):
    """An int or float literal, signed (``-1``, ``+1``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def literal_edits(source: str) -> list[tuple[int, str, str, str]]:
    """(line, setting, the copy of ``source``, what changed) for each value the file chooses in a literal
    (see :func:`_value_sites`), written otherwise: a bool turned (not a call's switch inside a function); a
    string given another the code compares with or another key of the table it is a key of; outside
    functions, an int one more, one less or of the other sign, a float of 0.0 (a fill, a start) as -inf; in
    a document, each entry the same way (an int, a yes / no, a word at a value's place, never a key: a word
    before ``=`` or ``:``) and two ints of different lines swapped. At most :data:`MAX_LITERAL_EDITS`, the
    values outside functions first."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return []
    compared, keyed = _compared(tree), _keyed(tree)
    starts = [0]
    for raw in source.encode("utf-8").splitlines(keepends=True):
        starts.append(starts[-1] + len(raw))
    blob = source.encode("utf-8")
    edits: list[tuple[int, str, str, str]] = []
    seen: set[tuple[int, int]] = set()

    def put(lineno: int, name: str, a: int, b: int, new: str, was: str) -> None:
        text = (blob[:a] + new.encode("utf-8") + blob[b:]).decode("utf-8")
        edits.append((lineno, name, text, f"{was} -> {new}"))

    for node, name, outside, argument in _value_sites(tree):
        if (node.lineno, node.col_offset) in seen:
            continue
        seen.add((node.lineno, node.col_offset))
        a = starts[node.lineno - 1] + node.col_offset
        b = starts[node.end_lineno - 1] + node.end_col_offset
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            if argument and not outside:  # a call's switch inside a function (keepdim=True, bias=False)
                continue
            put(node.lineno, name, a, b, str(not node.value), str(node.value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _document(node.value):
            edits.extend(_document_edits(blob, a, b, node.lineno, name, compared, keyed))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            for word in _instead(node.value, compared, keyed, True):
                put(node.lineno, name, a, b, repr(word), repr(node.value))
        elif outside and node.lineno == node.end_lineno and _number(node) is not None:
            value = _number(node)
            if isinstance(value, int) and not isinstance(value, bool):
                for new in sorted({value + 1, value - 1, -value} - {value}):
                    put(node.lineno, name, a, b, str(new), str(value))
            elif value == 0.0:
                put(node.lineno, name, a, b, 'float("-inf")', "0.0")
    return edits[:MAX_LITERAL_EDITS]


def _document_edits(blob: bytes, a: int, b: int, lineno: int, name: str, compared, keyed) -> list[tuple[int, str, str, str]]:
    """The edits of :func:`literal_edits` inside one document, the bytes ``a:b`` of the file."""
    def splice(start: int, end: int, new: str) -> str:
        return (blob[:start] + new.encode("utf-8") + blob[end:]).decode("utf-8")

    edits, ints = [], []
    for m in _TOKEN.finditer(blob, a, b):
        word = m.group().decode("utf-8")
        before = blob[a:m.start()].rstrip(b" \t\"'")
        line = lineno + blob[a:m.start()].count(b"\n")
        last = before.split()[-1] if before.split() else b""
        after = blob[m.end():b].lstrip(b" \t\"'")[:1]
        valued = (before[-1:] in (b"=", b":", b",", b"[") or last.startswith(b"--")) and after not in (b"=", b":")
        if _INT.fullmatch(word):
            ints.append((line, m.start(), m.end(), word))
            edits.extend((line, name, splice(m.start(), m.end(), str(new)), f"{word} -> {new}")
                         for new in (int(word) + 1, int(word) - 1))
        elif word in _FLIPS and valued:
            edits.append((line, name, splice(m.start(), m.end(), _FLIPS[word]), f"{word} -> {_FLIPS[word]}"))
        elif word[0].isalpha() or word[0] == "_":
            edits.extend((line, name, splice(m.start(), m.end(), other), f"{word} -> {other}")
                         for other in _instead(word, compared, keyed, valued))
    for i, (l1, s1, e1, w1) in enumerate(ints):  # two entries of different lines given each other's number
        for l2, s2, e2, w2 in ints[i + 1:]:
            if l1 != l2 and w1 != w2:
                text = (blob[:s1] + w2.encode() + blob[e1:s2] + w1.encode() + blob[e2:]).decode("utf-8")
                edits.append((l1, name, text, f"{w1} <-> {w2}"))
    return edits


@_ours_none
def literal_setting(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
                    source: str) -> tuple[int, str, str] | None:
    """(line, setting, what changed) of the value the file chooses in a literal (see :func:`literal_edits`)
    that, written otherwise, makes the case's outputs right, when the edits that do are all on one line more
    than a line from the finder's; else None. A value typed in a document the code parses (an INI, a CSV, an
    options line), in a table, a field's default or a decorator's keyword is read far from where it is
    chosen, and the trail sees only the step that reads it. Any exception of ours is None."""
    if found is None or found.reason not in LITERAL_REASONS or not t.reference or not t.ref_made:
        return None
    if _already_right(t, kind, ci, ni):
        return None
    given = frozenset(kind.config_params(ci))
    edits = [e for e in literal_edits(source) if abs(e[0] - found.line) > 1 and e[1] not in given]
    if not edits:
        return None
    right = _mending(edits, t, path, kind, ci, ni, timeout, protect)
    return (right[0][0], right[0][1], right[0][3]) if len({e[0] for e in right}) == 1 else None


LITERAL_REASONS = TWIN_REASONS | frozenset({"raised", "table_entry", "table_key", "made_python", "scaled_defined"})
