"""A second opinion on a divergence inside one of the attempt's own functions: run it on the reference's values.

When the first wrong step the finder names (:mod:`.divergence`) is made inside a call of a function
the attempt file defines (a ``silu``, a split, a norm module's ``forward``), two stories fit the
trails alike: the function is wrong, or it is right and the call gives it the wrong thing
(``silu(self.w3(x))`` where the gate is ``w1``: ``silu``'s input is a right value, the wrong one).
The syntax cannot tell them apart; running the function can. A child forked like the trace child
(the same sandbox, a short time limit) traces the case again, keeps the arguments of that call, and
calls the function again with two of its tensor arguments of one shape swapped, or with one tensor
argument replaced by a value of the reference's trail of the same shape and dtype (a statement's or
a call's result, or a case input). When every output then holds a value the reference computes
from that value, the function is right, and the line to fix is outside it:

- the call's line, when the argument it passed holds a value the reference has too (the right
  value of another role: the up branch for the gate, ``h`` for the norm's ``x``);
- else the line that made the argument, a value the reference never has: the same question is
  asked of the call that made it when that is a call of the file's functions too (a norm module's
  ``forward`` fed a wrong slice), else that line is said.

When no output reproduces a reference value, the function is wrong on the reference's own values
and the finder's line inside it stands (a ``torch.triu(..., diagonal=0)`` in a ``causal_mask``
helper). Only tensor arguments are replaced, one at a time, with a bounded number of values; a
function that raises, or a child that runs out of its time, leaves the finder's line as it was (a
child a loaded machine starved of its CPU time: no line at all, see ``sandbox.Starved``). The runs
stop after RUN_SECONDS of the child's CPU time, never of the wall clock.
"""

from __future__ import annotations

import ast
import dataclasses
import sys
import time
import types
from pathlib import Path

import torch

from attnprep.grader.found import Found, assigned, close, tensor_of
from attnprep.grader.parsing import parsed

MAX_CALLS = 4  # calls asked about: the divergence's, then the calls that made its wrong arguments
MAX_CANDIDATES = 16  # reference values tried in place of one argument
MAX_RUNS = 64  # calls of the attempt's functions on substituted arguments, in all
MAX_OUTPUTS = 4  # tensors of a call's result compared
MAX_VALUES = 20_000  # values of one output sent back (as trace.MAX_VALUES)
CHILD_SECONDS = 3.0  # the child's time (tracing the case again and the runs), at most the grade's timeout
# the runs on substituted arguments stop after this long of the child's CPU time: on the wall clock a
# loaded machine would cut them short and another line would be said than on a quiet one
RUN_SECONDS = 1.0
SWAP = -(10**6)  # a run's slot when two arguments of one shape were swapped (its candidate: which two)
FLIP = SWAP - 1  # a run's slot when a flag argument (a bool) was given the other way (its candidate: which, see _flag)
PAIR = FLIP - 1  # a run's slot when the two tensors of a pair argument ((cos, sin)) were swapped (its candidate: which, as FLIP's)
# the values right in another layout (a layout is no value to reproduce), an exception, a check's line
_NO_SECOND_OPINION = {"layout", "raised", "raised_first", "raised_shape", "contract", "check", "structure", "given", "given_made",
                      "given_flag", "given_pair", "made_python", "table_key"}


@dataclasses.dataclass
class Ask:
    """One call to run again: the call of the function whose code starts on ``first`` (its ``def``
    or first decorator) that made attempt step ``at`` (whose stack the child checks is
    ``stack``); ``slots``: the trail's index of an argument (a step, or ``-(k + 1)`` for the
    case's k-th input) -> the candidate values tried in its place."""

    first: int
    name: str
    at: int
    stack: list[int]
    slots: dict[int, list[int]]


def _functions(source: str) -> list[tuple[int, int, int, str]]:
    """(first line with decorators, def line, last line, name) of every function of the file;
    a method's name is ``Class.method``."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return []
    found = []

    def visit(node, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append((first, child.lineno, child.end_lineno or child.lineno,
                              f"{owner}.{child.name}" if owner else child.name))
                visit(child, "")
            elif isinstance(child, ast.ClassDef):
                visit(child, child.name)
            else:
                visit(child, owner)

    visit(tree, "")
    return found


def _made_inside(ref, solution: Path, name: str) -> set[int]:
    """The reference steps made inside the reference's function called ``name`` (``Class.method``
    as :func:`_functions` names it), whatever called it; none when the reference has no such function."""
    try:
        functions = _functions(solution.read_text(encoding="utf-8"))
    except OSError:
        return set()
    spans = [(f[1], f[2]) for f in functions if _same_function(f[3], name)]
    if not spans:
        return set()
    return {r for r, s in enumerate(ref) if s.stack and any(a < s.stack[-1] <= b for a, b in spans)}


def _same_function(theirs: str, mine: str) -> bool:
    """``mine`` is the reference's function ``theirs``: the same name, or the same method of a class
    named as the reference's with a prefix (Hugging Face's ``LlamaRMSNorm.forward`` for ``RMSNorm.forward``)."""
    if theirs == mine:
        return True
    (a, _, m), (b, _, n) = theirs.rpartition("."), mine.rpartition(".")
    return bool(a and b) and m == n and (a.endswith(b) or b.endswith(a))


def _function_of(functions, line: int):
    """The innermost function of the file whose body holds ``line``."""
    holding = [f for f in functions if f[1] < line <= f[2]]
    return min(holding, key=lambda f: f[2] - f[1]) if holding else None


def _frame_of(stack: list[int], fn) -> int:
    """The index in ``stack`` of the frame of ``fn``'s call that holds its last line: the first of the
    innermost lines inside ``fn`` (a generator expression of ``fn`` runs in a frame of its own)."""
    i = len(stack) - 1
    while i > 0 and fn[1] < stack[i - 1] <= fn[2]:
        i -= 1
    return i


def _call_steps(att, k: int, fn) -> list[int]:
    """The attempt steps made in the call (of function ``fn``) that made step ``k``: the run of
    steps around ``k`` made with the same frames up to that call, the call's own frame in ``fn``."""
    d = _frame_of(att[k].stack, fn)
    outer = att[k].stack[:d]

    def member(j: int) -> bool:
        s = att[j].stack
        return len(s) > d and s[:d] == outer and fn[1] < s[d] <= fn[2]

    lo, hi = k, k
    while lo > 0 and member(lo - 1):
        lo -= 1
    while hi + 1 < len(att) and member(hi + 1):
        hi += 1
    return list(range(lo, hi + 1))


def _ask_for(att, k: int, functions, candidates) -> Ask | None:
    """The :class:`Ask` for the call that made attempt step ``k``, or None (made at the file's top,
    or a call with no tensor argument the reference has values of that shape for).
    ``candidates(p, before)``: the values tried in place of argument ``p`` of a call made at step ``before``."""
    step = att[k]
    if len(step.stack) < 2:
        return None
    fn = _function_of(functions, step.stack[-1])
    if fn is None or _frame_of(step.stack, fn) == 0:
        return None  # (made at the outermost call: no call of the file's to ask about)
    members = _call_steps(att, k, fn)
    inside = set(members)
    slots: dict[int, list[int]] = {}
    for j in members:
        for p in att[j].parents:
            if p not in inside and p not in slots and att[p].values is not None:
                slots[p] = candidates(p, members[0])
        for x in att[j].inputs:
            if -(x + 1) not in slots:
                slots[-(x + 1)] = candidates(-(x + 1), members[0])
    slots = {p: c for p, c in slots.items() if c}
    if not slots:
        return None
    return Ask(fn[0], fn[3], k, list(step.stack), slots)


def second_opinion(found: Found, t, path: Path, kind, ci: int, ni: int, timeout: float, protect, source: str) -> Found:
    """``found`` as the finder said it, or the line outside the function it is in when that
    function, run on the reference's values, gives the reference's result (see the module doc).
    A help on top of the finder's line: any exception of ours leaves that line as it is."""
    import os

    try:
        return _second_opinion(found, t, path, kind, ci, ni, timeout, protect, source)
    except Exception:  # noqa: BLE001
        if os.environ.get("ATTNPREP_DEBUG"):
            raise
        return found


def _second_opinion(found: Found, t, path: Path, kind, ci: int, ni: int, timeout: float, protect, source: str) -> Found:
    from attnprep.grader import divergence

    if found is None or found.reason in _NO_SECOND_OPINION or not t.attempt or not t.reference:
        return found
    att, ref = t.attempt, t.reference
    functions = _functions(source)
    fn = _function_of(functions, found.line)
    if fn is None:
        return found
    matcher = divergence.Matcher(ref)
    case = kind.cases(ci)[ni]
    sources = [v for v in case.inputs.values() if isinstance(v, torch.Tensor)]
    # the values the reference's code holds (the results of a statement or of a call), not a step
    # inside one, which a later step of the same statement goes on from: the ``x - x_max`` of its
    # softmax, whose max of 0 hides a helper's wrong sign
    inside = {p for s in ref for p in s.parents if 0 <= p < len(ref) and ref[p].stack == s.stack}
    # nor a value the reference makes inside its own function of this name (its RMSNorm's normalised
    # h): a function missing that step is right on it, and wrong on what its caller passes
    inside |= _made_inside(ref, kind.exercise.solution_path, fn[3])
    by_shape: dict[tuple, list[int]] = {}
    for r, s in enumerate(ref):
        if s.values is not None and r not in inside:
            by_shape.setdefault((tuple(s.shape), s.dtype), []).append(r)
    for k, x in enumerate(sources):
        by_shape.setdefault((tuple(x.shape), str(x.dtype).replace("torch.", "")), []).insert(0, -(k + 1))

    def candidates(p: int, before: int) -> list[int]:
        """The reference's values of argument ``p``'s shape and dtype, first those the attempt has
        already made before the call (the value a wrong call should have passed is at hand), then
        the others; the case's inputs count as the reference's values."""
        if p < 0:
            shape, dtype = tuple(sources[-p - 1].shape), str(sources[-p - 1].dtype).replace("torch.", "")
        else:
            shape, dtype = tuple(att[p].shape), att[p].dtype
        same = [c for c in by_shape.get((shape, dtype), []) if p >= 0 or c != p]
        at_hand = set()
        for j in range(before):
            if tuple(att[j].shape) == shape and att[j].values is not None:
                at_hand.update(r for r, _ in matcher.matches(tensor_of(att[j]), att[j].dtype))
        return sorted(same, key=lambda c: c >= 0 and c not in at_hand)[:MAX_CANDIDATES]

    first = None
    # is the function right? asked of the first of its calls through the line that made a value the
    # reference never has (where it seems to go wrong; another call of it may have been right); else,
    # for a value the reference only holds half-way through a line (incomplete), of the first call
    # through that line, with its flags tried the other way only (a step of the function left out by
    # a flag of the call)
    for half_way in (False, True):
        if half_way and found.reason != "incomplete":
            break
        for j, s in enumerate(att):
            if s.line == found.line and len(s.stack) >= 2 and _function_of(functions, s.stack[-1]) == fn:
                ask = _ask_for(att, j, functions, candidates)
                if ask is not None and (half_way or any(
                        att[m].values is not None and not matcher.matches(tensor_of(att[m]), att[m].dtype)
                        for m in _call_steps(att, j, fn))):
                    first = dataclasses.replace(ask, slots={}) if half_way else ask  # (half-way: its flags only)
                    break
        if first is not None:
            break
    if first is None:
        return found
    asks = [first]
    for ask in asks:  # the calls that made an argument the reference never has, asked too (bounded)
        for p in ask.slots:
            if len(asks) < MAX_CALLS and p >= 0 and not _holds_reference_value(att[p], matcher):
                more = _ask_for(att, p, functions, candidates)
                if more is not None and all(more.first != a.first or more.stack != a.stack for a in asks):
                    asks.append(more)
    answers = _run(path, kind, ci, ni, asks, ref, min(timeout, CHILD_SECONDS), protect)
    if answers is None:
        return found
    return _judged(found, asks, answers, att, ref, matcher, path, sources) or found


KEYWORD_FLAGS = 1000  # a flipped flag's candidate: its positional index, or this plus its keyword-only index


def _flag_name(path: Path, first: int, cand: int | None) -> str | None:
    """The name of the parameter a FLIP run's candidate ``cand`` stands for, in the function whose
    code starts on line ``first`` (its ``def`` or first decorator), or None."""
    if cand is None:
        return None
    try:
        tree = parsed(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and min([node.lineno, *(d.lineno for d in node.decorator_list)]) == first:
            names = [a.arg for a in node.args.posonlyargs + node.args.args] if cand < KEYWORD_FLAGS \
                else [a.arg for a in node.args.kwonlyargs]
            j = cand if cand < KEYWORD_FLAGS else cand - KEYWORD_FLAGS
            return names[j] if 0 <= j < len(names) else None
    return None


def _pair(given) -> bool:
    """A tuple or list of two tensors of one shape and dtype (a ``(cos, sin)`` pair)."""
    return type(given) in (tuple, list) and len(given) == 2 and all(isinstance(g, torch.Tensor) for g in given) \
        and given[0].shape == given[1].shape and given[0].dtype == given[1].dtype


def _pair_read(path: Path, first: int, function: str, name: str | None, caller) -> int | None:
    """Where the pair parameter ``name`` of the function whose code starts on line ``first`` goes
    wrong when the function is right with its two tensors the other way round: the call's line when
    the call writes the pair out itself (``f(x, (sin, cos))``), else the function's statement that
    unpacks it (``sin, cos = position_embeddings``), else None (read otherwise: nothing to say)."""
    if name is None:
        return None
    try:
        tree = parsed(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None
    if isinstance(caller, int):
        for node in ast.walk(tree):
            called = node.func.attr if isinstance(getattr(node, "func", None), ast.Attribute) else \
                getattr(getattr(node, "func", None), "id", None)
            if isinstance(node, ast.Call) and called == function and node.lineno <= caller <= (node.end_lineno or node.lineno) \
                    and any(isinstance(a, (ast.Tuple, ast.List)) and len(a.elts) == 2
                            for a in [*node.args, *(k.value for k in node.keywords)]):
                return caller
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and min([node.lineno, *(d.lineno for d in node.decorator_list)]) == first:
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id == name \
                        and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Tuple, ast.List)) \
                        and len(stmt.targets[0].elts) == 2:
                    return stmt.lineno
    return None


def _holds_reference_value(step, matcher) -> bool:
    t = tensor_of(step)
    return t is not None and bool(matcher.same_values(t, step.dtype))


def _descendants(ref) -> list[set[int]]:
    """For each reference step, the steps computed from it (directly or through others)."""
    below = [set() for _ in ref]
    for j in range(len(ref) - 1, -1, -1):
        for p in ref[j].parents:
            if 0 <= p < len(ref):
                below[p] |= below[j] | {j}
    return below


def _finished(ref, cand: int) -> set[int]:
    """The result of the reference function call that made ``cand`` half-way through (its last step):
    a function of the attempt that, given ``cand``, gives that result only finished the reference's
    function (an ``rms`` helper that lost its statistic is right on the reference's normalised ``h``),
    and is no more shown right than the reference's own function of its name (see :func:`_made_inside`).
    Empty for a value the reference's top level makes."""
    stack = list(ref[cand].stack or ())
    if len(stack) < 2:
        return set()
    call = [r for r, s in enumerate(ref) if list(s.stack or ())[:-1] == stack[:-1] and len(s.stack or ()) == len(stack)]
    return {call[-1]} if call and call[-1] != cand else set()


def _reproduces(outputs, cand: int | None, ref, matcher, below, sources) -> bool:
    """Every float output holds, in a layout a correct attempt may use, a value the reference
    computes from candidate ``cand`` (any of its values when ``cand`` is a case input, or None:
    the call's own arguments swapped), and none is ``cand``'s own value passed through."""
    floats = [(t, d) for t, d in outputs if d not in ("bool", "int64", "int32", "long")]
    if not floats:
        return False
    own = None if cand is None else tensor_of(ref[cand]) if cand >= 0 else sources[-cand - 1].detach().to(torch.float64)
    finished = _finished(ref, cand) if cand is not None and cand >= 0 else set()  # one walk of the trail, not one per output
    for t, dtype in floats:
        same = set(matcher.same_values(t, dtype))
        if not same:
            return False
        held = {r for r, _ in matcher.matches(t, dtype) if r in same}
        if cand is not None and cand >= 0:
            held &= below[cand]
            held -= finished
        if own is not None and own.numel() == t.numel() and close(t.flatten(), own.flatten()):
            return False  # its input passed through
        if not held:
            return False
    return True


def _judged(found: Found, asks: list[Ask], answers: dict, att, ref, matcher, path: Path, sources) -> Found | None:
    """The line outside the function (see the module doc), or None when the function of the
    divergence's call is not shown right."""
    from attnprep.grader import engine

    below = _descendants(ref)
    statements = engine._statements(path)

    def right(i: int) -> int | None:
        """The argument whose replacement gave the reference's result in call ``i``, or None."""
        for slot, cand, outputs in answers.get(i, {}).get("runs", []):
            if _reproduces(outputs, None if slot in (SWAP, FLIP, PAIR) else cand, ref, matcher, below, sources):
                flipped[i] = cand if slot in (FLIP, PAIR) else None
                return slot
        return None

    flipped: dict[int, int | None] = {}

    def said(line: int, reason: str, ask: Ask, made: int | None = None) -> Found:
        """``line`` said for ``reason``; ``made``: the attempt step of the wrong argument it made (its name)."""
        from attnprep.grader.divergence import _Trails

        first, code = statements.get(line, (line, ""))
        if not code:
            import linecache

            code = linecache.getline(str(path), line).strip()
        name = _Trails.name_of(att, made) if made is not None and att[made].code == code else \
            assigned(code) if made is not None else ""
        return Found(first, code, name, (), "", reason, ask.name, part=found.part)

    i, seen, given = 0, set(), None  # given: (the call before, the argument) that led to call i
    while i not in seen:
        seen.add(i)
        ask = asks[i]
        slot = right(i)
        if slot is None:  # wrong on the reference's values too: the line that made the argument, inside it
            return None if given is None else said(att[given[1]].line, "given_made", asks[given[0]], given[1])
        caller = answers[i].get("caller")
        if slot == PAIR:  # right with the pair's two tensors the other way round: where the pair is read (or built)
            pair = _flag_name(path, ask.first, flipped.get(i))
            at = _pair_read(path, ask.first, ask.name.rsplit(".", 1)[-1], pair, caller)
            if at is None:
                return None
            return dataclasses.replace(said(at, "given_pair", ask), name=pair)
        if slot == FLIP:  # the function is right with the flag the other way: the call's flag is the mistake
            flag = _flag_name(path, ask.first, flipped.get(i))
            if not isinstance(caller, int) or flag is None:
                return None
            return dataclasses.replace(said(caller, "given_flag", ask), name=flag)
        if slot < 0 or _holds_reference_value(att[slot], matcher):  # (a swap: the values right, their order not)
            return said(caller, "given", ask) if isinstance(caller, int) else None
        made = next((j for j, a in enumerate(asks) if j not in seen and a.at == slot), None)
        if made is None:
            return said(att[slot].line, "given_made", ask, slot)
        i, given = made, (i, slot)
    return None


def _run(path: Path, kind, ci: int, ni: int, asks: list[Ask], ref, seconds: float, protect) -> dict | None:
    """The child's runs: call index -> {"caller": line, "runs": [(slot, candidate, [(tensor, dtype)])]}."""
    from attnprep.grader import child, engine, sandbox
    from attnprep.grader.tensors import unpack_shaped

    values = {r: tensor_of(ref[r]) for a in asks for c in a.slots.values() for r in c if r >= 0}
    forget = child.reference_modules()  # asked before the fork (see there)
    outcome = sandbox.run_help(lambda channel: _child(path, kind, ci, ni, asks, values, channel, protect, forget), seconds,
                               answer=engine._answerer(kind))
    data = outcome.data
    if not isinstance(data, dict) or not isinstance(data.get("calls"), list):
        return None
    found: dict[int, dict] = {}
    for item in data["calls"][: len(asks)]:  # what the attempt's process sends is checked, never trusted
        if not (isinstance(item, dict) and isinstance(item.get("ask"), int) and 0 <= item["ask"] < len(asks)
                and isinstance(item.get("runs"), list)):
            return None
        ask = asks[item["ask"]]
        runs = []
        for run in item["runs"][:MAX_RUNS]:
            if not (isinstance(run, list) and len(run) == 3 and isinstance(run[0], int) and isinstance(run[1], int)
                    and (run[0] in ask.slots and run[1] in ask.slots[run[0]] or run[0] in (SWAP, FLIP, PAIR))
                    and isinstance(run[2], list)):
                return None
            outputs = []
            for o in run[2][:MAX_OUTPUTS]:
                if not (isinstance(o, list) and len(o) == 3 and isinstance(o[0], list)
                        and all(isinstance(n, int) and n >= 0 for n in o[0]) and isinstance(o[1], str)):
                    return None
                t = unpack_shaped(tuple(o[0]), o[2], MAX_VALUES)
                if t is None:
                    return None
                outputs.append((t, o[1][:20]))
            runs.append((run[0], run[1], outputs))
        caller = item.get("caller")
        found[item["ask"]] = {"caller": caller if isinstance(caller, int) and not isinstance(caller, bool) else None,
                              "runs": runs}
    return found


# --- the child's side ---------------------------------------------------------------------------


def _function(code) -> types.FunctionType | None:
    """The one function object of ``code`` (a function made afresh on each call, a closure, is left out)."""
    import gc

    made = [f for f in gc.get_referrers(code) if isinstance(f, types.FunctionType) and f.__code__ is code]
    return made[0] if len(made) == 1 else None


def _arguments(frame) -> tuple[list, dict] | None:
    """The arguments a call's frame was entered with, as (positional, keyword) to call its function again."""
    code = frame.f_code
    names = code.co_varnames
    n, kw = code.co_argcount, code.co_kwonlyargcount
    values = frame.f_locals
    try:
        positional = [values[name] for name in names[:n]]
        keyword = {name: values[name] for name in names[n:n + kw]}
        at = n + kw
        if code.co_flags & 0x04:  # *args
            positional += list(values[names[at]])
            at += 1
        if code.co_flags & 0x08:  # **kwargs
            keyword.update(values[names[at]])
    except (KeyError, TypeError, IndexError):
        return None
    return positional, keyword


def _child(path: Path, kind, ci: int, ni: int, asks: list[Ask], values: dict, channel, protect,
           forget: list[str]) -> dict:
    """In the forked child: trace the case again, keep the arguments of the asked calls, call their
    functions again on the substituted arguments (see the module doc)."""
    from attnprep.grader import child
    from attnprep.grader.tensors import pack, tensors_in
    from attnprep.grader.trace import Tracer

    prepared = child.prepare(path, kind, ci, channel, protect, forget)
    if prepared is None:
        return {"calls": []}
    guard, _, built = prepared
    case = kind.cases(ci)[ni]
    sources = [v for v in case.inputs.values() if isinstance(v, torch.Tensor)]
    filename = str(path)
    tracer = Tracer(sources, filename)
    wanted = {a.first for a in asks}
    calls: list[dict] = []
    open_calls: dict[int, dict] = {}

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code.co_firstlineno in wanted and code.co_filename == filename:
                back = frame.f_back
                while back is not None and back.f_code.co_filename != filename:  # (nn.Module.__call__ …)
                    back = back.f_back
                call = {"first": code.co_firstlineno, "entry": len(tracer.steps), "exit": None, "frame_code": code,
                        "args": _arguments(frame), "caller": back.f_lineno if back is not None else None}
                if call["args"] is not None:
                    call["slots"] = [tracer.index.get(id(x)) for x in call["args"][0]]
                    call["kw_slots"] = {k: tracer.index.get(id(x)) for k, x in call["args"][1].items()}
                open_calls[id(frame)] = call
                calls.append(call)
        elif event == "return" and open_calls:
            call = open_calls.pop(id(frame), None)
            if call is not None:
                call["exit"] = len(tracer.steps)

    try:
        sys.setprofile(profile)
        with guard.armed(), tracer, torch.no_grad():
            kind.run(built.attempt, case)
    except BaseException:
        pass
    finally:
        sys.setprofile(None)
    if guard.opened:
        return {"calls": []}
    out = []
    runs_left, stop = MAX_RUNS, time.process_time() + RUN_SECONDS
    for i, ask in enumerate(asks):
        if ask.at >= len(tracer.steps) or tracer.steps[ask.at].stack != ask.stack:
            continue  # not the same run as the trail's: nothing to say
        made = [c for c in calls if c["first"] == ask.first and c["entry"] <= ask.at < (c["exit"] or len(tracer.steps))
                and c["args"] is not None]
        if not made:
            continue
        call = min(made, key=lambda c: (c["exit"] or len(tracer.steps)) - c["entry"])
        function = _function(call["frame_code"])
        if function is None:
            continue
        positional, keyword = call["args"]
        runs = []
        places = [("p", j, s) for j, s in enumerate(call["slots"]) if s in ask.slots] + \
            [("k", k, s) for k, s in call["kw_slots"].items() if s in ask.slots]
        trials = []  # (slot, candidate, {place: value}): a flag the other way, two arguments of one shape swapped, one replaced
        for j, given in enumerate(positional):
            if isinstance(given, bool):
                trials.append((FLIP, j, {("p", j): not given}))
        for j, (key, given) in enumerate(keyword.items()):
            if isinstance(given, bool) and j < KEYWORD_FLAGS:
                trials.append((FLIP, KEYWORD_FLAGS + j, {("k", key): not given}))
        for j, given in enumerate(positional):  # a pair of tensors of one shape, given the other way round
            if _pair(given):
                trials.append((PAIR, j, {("p", j): type(given)((given[1], given[0]))}))
        for j, (key, given) in enumerate(keyword.items()):
            if _pair(given) and j < KEYWORD_FLAGS:
                trials.append((PAIR, KEYWORD_FLAGS + j, {("k", key): type(given)((given[1], given[0]))}))
        for x, (kx, px, _) in enumerate(places):
            for y, (ky, py, _) in enumerate(places[x + 1:], x + 1):
                gx = positional[px] if kx == "p" else keyword[px]
                gy = positional[py] if ky == "p" else keyword[py]
                if isinstance(gx, torch.Tensor) and isinstance(gy, torch.Tensor) and gx.shape == gy.shape \
                        and gx.dtype == gy.dtype:
                    trials.append((SWAP, x * 1000 + y, {(kx, px): gy, (ky, py): gx}))
        for kp, key, slot in places:
            given = positional[key] if kp == "p" else keyword[key]
            if not isinstance(given, torch.Tensor):
                continue
            for cand in ask.slots[slot]:
                value = sources[-cand - 1] if cand < 0 else values.get(cand)
                if value is not None and value.numel() == given.numel():
                    trials.append((slot, cand, {(kp, key): value.detach().reshape(given.shape).to(given.dtype).clone()}))
        for slot, cand, replaced in trials:
            if runs_left <= 0 or time.process_time() > stop:
                break
            args, kwargs = list(positional), dict(keyword)
            for (kp, key), value in replaced.items():
                if kp == "p":
                    args[key] = value
                else:
                    kwargs[key] = value
            runs_left -= 1
            try:
                with guard.armed(), torch.no_grad():
                    result = function(*args, **kwargs)
            except BaseException:
                continue
            if dataclasses.is_dataclass(result) and not isinstance(result, type):  # a record of tensors: its fields
                result = [getattr(result, f.name, None) for f in dataclasses.fields(result)]
            outputs = []
            for o in tensors_in(result)[:MAX_OUTPUTS]:
                o = o.detach()
                if o.is_complex():
                    o = torch.view_as_real(o.resolve_conj())
                if o.numel() > MAX_VALUES:
                    outputs = []
                    break
                outputs.append([list(o.shape), str(o.dtype).replace("torch.", ""), pack(o)])
            if outputs:
                runs.append([slot, cand, outputs])
        out.append({"ask": i, "caller": call["caller"], "runs": runs})
    if guard.opened:
        return {"calls": []}
    return {"calls": out}
