"""The grading process's side: compute the reference, compare, run the probes, name the mistake.

Everything the child sent is a decoded :class:`~attnprep.grader.wire.Reply`; nothing it computed
about the reference is trusted (it never had the reference). Results are ids and numbers.
Verdict precedence: contract > used a built-in > error > wrong shape > mask leak > wrong output;
the headline then follows the named mistake's category when one is named.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy
import torch

from attnprep.exercises import mistake_catalogue
from attnprep.grader import outputs as kept_outputs
from attnprep.grader import variants
from attnprep.grader.cases import Case, grads_case
from attnprep.grader.edits import EditError, variant_code
from attnprep.grader.observe import Observer
from attnprep.grader.result import (ROW_SUM_TOL, Check, Diagnosis, ErrorInfo, Heatmap, MappingNote, Message,
                                    Names, OutputDiff, Result, ShapeRow, Verdict, msg)
from attnprep.grader.tensors import ATOL, RTOL, decode_tensor
from attnprep.grader.wire import ConfigReply, Reply

LEAK_CHECKS = ("causality", "padding", "batch")
# Autograd nodes that only built-in attention leaves in the graph, and the name the report gives
# them. SDPA's math path is the one user of _safe_softmax (a hand-written F.softmax leaves
# SoftmaxBackward0).
BUILTIN_NODES = {
    "ScaledDotProductFlashAttentionForCpuBackward0": "scaled_dot_product_attention (flash, CPU)",
    "ScaledDotProductFlashAttentionBackward0": "scaled_dot_product_attention (flash)",
    "ScaledDotProductEfficientAttentionBackward0": "scaled_dot_product_attention (efficient)",
    "ScaledDotProductCudnnAttentionBackward0": "scaled_dot_product_attention (cuDNN)",
    "SafeSoftmaxBackward0": "scaled_dot_product_attention (math)",
}
GRAD_RTOL, GRAD_ATOL = 1e-3, 1e-4  # gradients sum over every graded output: a looser tolerance
PAIR_LIMIT = 900  # two-mistake variants tried when no single one explains the outputs (failures only): every
# pair of every exercise whose kind does not set a lower ``pair_limit`` (a script of calls per variant)
SHOWN_CASES = 4  # a named mistake's case group lists at most this many case names
SAME_PROBS = 1e-6  # attention that differs by no more at graded rows is the reference's (no heat-map of it)
STRUCTURE = "structure"  # a kind's check whose id starts with this is a structure check (verdict structure)

# The generic probes that name a mistake on their own (a catalogue mistake declares which: its
# ``shown_by``), in the order their diagnoses are given; the softmax's dim comes after the kind's own.
SHOWN_BY = ("eval", "input_modified", "backward_inplace", "device", "dtype", "softmax_dim")


def _the_mistakes_own(exc: BaseException, knob) -> bool:
    """Whether ``exc``, raised while a variant ran, is the mistake's own doing rather than the
    grader's (which ATTNPREP_DEBUG shows): raised through the edited reference's code (a mistake
    that crashes on some cases, as the attempt it stands for does), or two knobs whose edits of the
    reference overlap (no variant at all)."""
    if isinstance(exc, EditError):
        return not isinstance(knob, str)
    tb = exc.__traceback__
    while tb is not None:
        if variant_code(tb.tb_frame.f_code.co_filename):
            return True
        tb = tb.tb_next
    return False


@dataclass
class Compared:
    case: Case
    config: int
    diff: OutputDiff


def close(got: torch.Tensor, want: torch.Tensor, where: torch.Tensor, equal_nan: bool = False,
          tolerance: tuple[float, float] | None = None) -> bool:
    rtol, atol = tolerance or (RTOL, ATOL)
    mask = _numpy_mask(where)
    if mask is not None and got.dtype == want.dtype == torch.float64 and got.shape == want.shape == where.shape:
        mine, theirs = _graded_doubles(got, mask, (torch.float64,)), _graded_doubles(want, mask, (torch.float64,))
        if mine is not None and theirs is not None:  # finite doubles both: isclose's test in numpy (equal_nan aside)
            return _close_finite(mine, theirs, {}, rtol, atol)
    return bool(torch.isclose(got[where], want[where], rtol=rtol, atol=atol, equal_nan=equal_nan).all())


def _numpy_mask(where: torch.Tensor):
    """A bool mask of graded positions as numpy (a view), or None where numpy would read it otherwise."""
    if where.dtype != torch.bool or where.device.type != "cpu":
        return None
    try:
        return where.detach().numpy()
    except (RuntimeError, TypeError, ValueError):
        return None


def _graded_doubles(t, where, dtypes=(torch.float64, torch.float32)):
    """``t.double()[where]`` as numpy and its first value, made in numpy (``where``: the mask from
    :func:`_numpy_mask`), or None (the comparison then stays torch's) unless ``t`` is a CPU tensor
    of one of ``dtypes`` (float32 and float64: its values as doubles exactly) whose graded values
    are at least one and all finite."""
    if where is None or t.dtype not in dtypes or t.device.type != "cpu":
        return None
    try:
        values = t.detach().numpy()[where]
    except (RuntimeError, TypeError, ValueError, IndexError):  # a tensor numpy cannot view (a negative bit)
        return None
    if values.dtype != numpy.float64:
        values = values.astype(numpy.float64)
    if values.size == 0 or not numpy.isfinite(values).all():
        return None
    return values, float(values[0])


def _close_finite(mine, theirs, allowed: dict, rtol: float, atol: float) -> bool:
    """``torch.isclose(mine, theirs, rtol, atol).all()`` of two arrays of finite doubles (from
    :func:`_graded_doubles`), the same test in the same double operations: ``|mine - theirs| <=
    atol + |rtol * theirs|`` everywhere (``allowed``: the right side by (rtol, atol), kept with
    ``theirs``), its first value first. (Finite values: isclose's equality and NaN terms add
    nothing, and an overflowing difference is inf, which is no allowed error.)"""
    (a, a0), (b, b0) = mine, theirs
    bound = allowed.get((rtol, atol))
    if bound is None:
        right = atol + numpy.abs(rtol * b)
        bound = allowed[(rtol, atol)] = right, float(right[0])
    if not abs(a0 - b0) <= bound[1]:
        return False
    return bool((numpy.abs(a - b) <= bound[0]).all())


def _index(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in t.nonzero()[0])


def output_diff(case: str, config: dict, output: str, got: torch.Tensor, want: torch.Tensor, where: torch.Tensor,
                tolerance: tuple[float, float] | None = None) -> OutputDiff:
    """torch.testing.assert_close's order: mismatched count, then the greatest differences."""
    rtol, atol = tolerance or (RTOL, ATOL)
    bad = ~torch.isclose(got, want, rtol=rtol, atol=atol) & where
    fields: dict = dict(case=case, config=config, output=output, mismatched=int(bad.sum()), total=int(where.sum()),
                        atol=atol, rtol=rtol)
    nonfinite = where & ~torch.isfinite(got)
    if nonfinite.any():
        idx = _index(nonfinite)
        fields.update(nonfinite=float(got[idx].item()), nonfinite_at=idx)
    finite = where & torch.isfinite(got) & torch.isfinite(want)
    if finite.any():
        absdiff = torch.where(finite, (got - want).abs(), torch.zeros_like(got))
        idx = _index(absdiff == absdiff.max())
        rel = absdiff / want.abs().clamp_min(1e-12)
        ridx = _index(rel == rel[finite].max())
        fields.update(max_abs=float(absdiff[idx]), max_abs_at=idx, max_rel=float(rel[ridx]), max_rel_at=ridx)
    return OutputDiff(**fields)


class Judge:
    def __init__(self, exercise, kind, reply: Reply, path):
        self.ex, self.kind, self.reply, self.path = exercise, kind, reply, path
        self.checks: list[Check] = []
        self.failed_cases: list[Compared] = []
        self._cases: dict[int, list[Case]] = {}
        self._ref_scores = None
        self.failures: list[tuple[int, int]] = []  # (config, case index) of every wrong output
        self.shape_failures: list[tuple[int, int]] = []  # … of every output of the wrong shape
        self.backward_error: dict | None = None  # the attempt's backward raised (its params)
        self.mutated: list[str] | None = None  # [case, input names …] changed in place by the attempt
        self.grad_problem: Message | None = None  # outputs with gradients on, or gradients, differ
        self.grad_outputs_wrong = False  # grad_problem is about the outputs (a wrong output, not a gradient)
        self.grads_explained: str | None = None  # the gradients' case, whose outputs are already wrong without them
        self._completed_differ = False  # the attempt raised at some sizes; where it ran, its outputs differ
        # the configs that ran to the end where the outputs differ, while an attempt that raised at some
        # sizes is diagnosed (None otherwise): a variant that cannot run at one of them is judged at the rest
        self._completed_differing: set[int] | None = None
        self.random_configs: set[int] = set()  # configs whose second call in eval mode gave other outputs
        self._kept = kept_outputs.Outputs(exercise, kind)  # the reference's and variants' outputs, shared across grades

    def cases(self, ci: int) -> list[Case]:
        """The kind's cases of config ``ci``, drawn once (drawing seeds and builds tensors)."""
        if ci not in self._cases:
            self._cases[ci] = self.kind.cases(ci)
        return self._cases[ci]

    @property
    def observed_case(self) -> Case:
        return next(c for c in self.cases(0) if c.observe)

    # --- entry --------------------------------------------------------------------------------

    def result(self, compared: Callable[..., None] | None = None) -> Result:
        """The verdict, checks and named mistakes. ``compared`` gets the outputs' verdict and failing cases
        as soon as they are compared and found wrong, before mistakes are named (the engine starts
        the divergence finder's child then)."""
        reply = self.reply
        base = dict(exercise=self.ex.id, file=str(self.path))
        if reply.internal is not None:
            return Result(**base, verdict=Verdict.ERROR, internal=True,
                          error=ErrorInfo("internal", msg("error.internal_child", text=reply.internal), reply.traceback))
        problem = reply.problem
        if problem is not None and problem.kind == "contract":
            return Result(**base, verdict=Verdict.CONTRACT, checks=(Check("contract", False, Message(problem.key, problem.params)),))
        # built-ins the child's observer saw, what the autograd graph shows, and those a kind saw
        # at the aten level ("builtins" in its extra)
        seen = set(reply.builtins) | self._builtin_ops(reply) | {
            b for c in reply.configs if isinstance(c.extra, dict) for b in c.extra.get("builtins") or () if isinstance(b, str)}
        builtins = sorted(seen)
        if builtins:
            names = Names(builtins)
            return Result(**base, verdict=Verdict.BUILTIN, checks=(Check("hand_written", False, msg("check.hand_written.bad", names=names)),),
                          diagnoses=(Diagnosis("used_builtin", (msg("evidence.builtin", names=names),)),))
        configs = reply.configs
        first = configs[0] if configs else None
        mapping = dict(first.mapping) if first else {}
        notes = tuple(MappingNote(*n) for n in first.notes) if first else ()
        if problem is not None:
            listed = {m.id for m in self.ex.mistakes}  # a mistake the kind saw behind the exception
            named = tuple(Diagnosis(i, (Message(key, params),)) for i, key, params in problem.named if i in listed)
            if not named and problem.kind == "exception":
                named = self._diagnose_completed(configs, reply.problem_config)
            if not named and problem.kind == "exception":
                named = self._diagnose_raised(configs, reply.problem_config)
            return Result(**base, verdict=Verdict.ERROR, checks=(Check("runs", False, Message(problem.key, problem.params)),),
                          error=ErrorInfo(problem.kind, Message(problem.key, problem.params), problem.traceback),
                          diagnoses=named[:2] if _a_pair(named) else named[:1], mapping=mapping, mapping_notes=notes)
        self.checks.append(Check("contract", True, msg("check.contract.by_name" if first.by_name else "check.contract.by_shape")))
        verdict = self._compare_all(configs)
        if compared is not None and verdict not in (Verdict.PASSED, Verdict.STRUCTURE, Verdict.GRADIENTS):
            compared(verdict, self.failures, self.shape_failures)
        heatmap, shapes, row_sums = self._observed(first)
        # attention not observed (a decode that attends over a compressed latent, an exp / sum softmax): the row would
        # only say so, on every report of such a kind; the heat-map is left out likewise
        self.checks = [c for c in self.checks if not (c.id == "softmax_rows" and c.passed is None)]
        diagnoses: tuple[Diagnosis, ...] = ()
        if verdict in (Verdict.STRUCTURE, Verdict.GRADIENTS):  # the outputs are the reference's: no variant reproduces them
            diagnoses = tuple(self._evidence_only(configs))
        elif verdict is not Verdict.PASSED:
            diagnoses = tuple(self._diagnose(configs))
            verdict = self._headline(verdict, diagnoses, configs)
        diff = self.failed_cases[0].diff if self.failed_cases else None
        return Result(**base, verdict=verdict, checks=tuple(self.checks), diagnoses=diagnoses, mapping=mapping,
                      mapping_notes=notes, shapes=shapes, heatmap=heatmap, row_sums=row_sums, output_diff=diff)

    def _builtin_ops(self, reply: Reply) -> set[str]:
        """Built-ins recognised by what ran, as the autograd graph of the case run with gradients
        records it (a table here, out of the attempt's reach), plus the nodes the exercise forbids
        (``[grading] forbidden_nodes``, e.g. ``SoftmaxBackward0`` where softmax is the exercise)."""
        forbidden = dict(BUILTIN_NODES)
        forbidden.update({n: n.removesuffix("Backward0") for n in self.kind.grading.forbidden_nodes})
        seen = {op for c in reply.configs for op in c.ops}
        return {forbidden[op] for op in seen if op in forbidden}

    def _headline(self, verdict: Verdict, diagnoses, configs: list[ConfigReply] = ()) -> Verdict:
        """A named mistake decides the headline among the failures of outputs: the category of the
        first named one that has one (of two named together, the one that mixes tokens says why
        the causality probe moved). Nothing named, a causality leak (no sample mixed with another)
        whose observed attention gives no weight to a key the masks block is no mask's doing: the
        tokens were mixed elsewhere (heads split by a view of (B, T, C) as (B, H, T, D)), a wrong output."""
        if verdict not in (Verdict.WRONG_OUTPUT, Verdict.MASK_LEAK):
            return verdict
        if not diagnoses:
            failed = {c.id for c in self.checks if c.passed is False}
            mixed = verdict is Verdict.MASK_LEAK and "causality" in failed and "batch" not in failed
            return Verdict.WRONG_OUTPUT if mixed and self._mask_kept(configs) else verdict
        categories = [getattr(self.ex.mistake(d.id), "category", "") or "" for d in diagnoses]
        category = next((c for c in categories if c), "")
        masks = any(not c and self._mistake(d.id).mask for d, c in zip(diagnoses, categories))
        if verdict is Verdict.MASK_LEAK and category == Verdict.WRONG_OUTPUT.value and masks:
            return verdict  # a mask slip named beside the one that mixes tokens: the leak is a mask's too
        return Verdict(category) if category in (Verdict.WRONG_OUTPUT.value, Verdict.MASK_LEAK.value) else verdict

    def _mask_kept(self, configs: list[ConfigReply]) -> bool:
        """Whether the attempt's attention on the observed case puts no weight on a key its mask
        blocks, at every graded query row of every sample (False when it was not seen)."""
        probs = self._probs(configs[0]) if configs else None
        if probs is None:
            return False
        case = self.observed_case
        for sample in range(probs.shape[0]):
            allowed = self.kind.allowed(case, sample)  # (Tq, Tk), or (H, Tq, Tk) per head
            if allowed.shape[-2:] != probs.shape[-2:] or (allowed.dim() == 3 and allowed.shape[0] != probs.shape[1]):
                return False  # per-head masks the attempt's heads do not line up with: nothing to conclude
            rows = case.queries[sample]
            blocked = (~allowed).expand(probs.shape[1:])  # (H, Tq, Tk)
            weight = probs[sample].double().nan_to_num(nan=1.0).abs()
            if (weight[:, rows] * blocked[:, rows]).max() > SAME_PROBS:
                return False
        return True

    # --- checks -------------------------------------------------------------------------------

    def _outputs(self, data: ConfigReply, case: Case) -> dict[str, torch.Tensor | None]:
        return {name: decode_tensor(value) for name, value in data.runs.get(case.name, {}).items()}

    def _compare_all(self, configs: list[ConfigReply]) -> Verdict:
        """Every probe's row, in the report's order, then the verdict (:data:`VERDICT_ORDER`)."""
        seen = self._gather(configs)
        add = self.checks.append
        add(_shapes_check(seen))
        if seen.shape_problems:
            return Verdict.WRONG_SHAPE
        add(_dtype_check(seen))
        add(self._output_check(seen))
        add(self._inputs_check(seen))
        add(_finite_check(seen))
        self.checks.extend(self._leak_checks(seen))
        self.checks.extend(self._gradients_check(configs, seen))
        self.checks.extend(_device_check(configs, seen))
        self.checks.extend(_merged(seen.extra_checks))
        if "softmax_rows" in self.kind.probes:
            add(self._row_sum_check(configs[0]))
        failed = [c for c in self.checks if c.passed is False]
        return next(verdict for verdict, holds in VERDICT_ORDER if holds(self, seen, failed))

    def _gather(self, configs: list[ConfigReply]) -> "Seen":
        """Run every config's cases through the comparisons: outputs against the reference, the
        perturbed cases against their base (the leak probes), and what the child measured of
        gradients, device, inputs and the kind's own checks."""
        kind = self.kind
        seen = Seen()
        for data in configs:
            ci = data.index
            zero_bias = frozenset(data.zero_bias)
            reference = functools.cache(lambda: kind.reference(ci, zero_bias))  # built only if an output is not kept
            outputs: dict[str, dict[str, torch.Tensor]] = {}
            for case in self.cases(ci):
                got_all = self._case_outputs(data, case, seen)
                if got_all is None:
                    continue
                outputs[case.name] = got_all
                with torch.no_grad():
                    wanted = self._kept.reference(ci, zero_bias, case, lambda: reference()(case))
                seen.total += 1
                differs = None
                for name, got in got_all.items():
                    where = case.mask(name, tuple(got.shape))
                    if not torch.isfinite(got[where]).all() and case.name not in seen.nonfinite:
                        seen.nonfinite.append(case.name)
                    want = wanted[name].double()
                    if differs is None and not close(got, want, where, tolerance=case.tolerance):
                        differs = output_diff(case.name, kind.config_params(ci), name, got, want, where, case.tolerance)
                if differs is not None:
                    seen.mismatches += 1
                    self.failed_cases.append(Compared(case, ci, differs))
                    self.failures.append((ci, self.cases(ci).index(case)))
            self._leaks_of(ci, outputs, seen)
            self._gradients_of(data, seen)
            if data.device is not None:
                if data.device.ok is False:
                    seen.device_fail.append(Message(data.device.key, data.device.params))
                elif data.device.ok is None:
                    seen.device_skip.append(Message(data.device.key, data.device.params))
            if data.extra is not None:
                seen.extra_checks.extend(kind.extra_checks(data.extra))
            seen.mutated.extend(m for m in data.mutated if m)
        return seen

    def _case_outputs(self, data: ConfigReply, case: Case, seen: "Seen") -> dict[str, torch.Tensor] | None:
        """The attempt's outputs of ``case`` decoded, or None when one is missing, not a tensor or
        of the wrong shape (said in ``seen.shape_problems``); a wrong dtype is noted once."""
        ci = data.index
        runs = data.runs.get(case.name, {})
        expected = self.kind.expected_shapes(ci, case)
        got_all: dict[str, torch.Tensor] = {}
        for name, shape in expected.items():
            run = runs.get(name, {})
            if run.get("type") != "Tensor":
                seen.shape_problems.append(msg("check.shapes.not_tensor", case=case.name, output=name,
                                               type=run.get("type", "nothing"), expected=str(shape)))
                continue
            if tuple(run["shape"]) != shape:
                seen.shape_problems.append(msg("check.shapes.bad", case=case.name, output=name,
                                               got=str(tuple(run["shape"])), expected=str(shape)))
                self.shape_failures.append((ci, self.cases(ci).index(case)))
                continue
            if run.get("dtype") != case.dtype and not seen.dtype_problems:
                seen.dtype_problems.append(msg("check.dtype.bad", dtype=run.get("dtype"), expected=case.dtype))
            got = decode_tensor(run)
            if got is None:
                seen.shape_problems.append(msg("check.shapes.bad", case=case.name, output=name, got="?", expected=str(shape)))
                continue
            got_all[name] = got
        return got_all if len(got_all) == len(expected) else None

    def _leaks_of(self, ci: int, outputs: dict[str, dict[str, torch.Tensor]], seen: "Seen") -> None:
        """The leak probes of config ``ci``: each perturbed case against its base, where the
        perturbation must leave the outputs unchanged."""
        for case in self.cases(ci):
            if case.base is None or case.name not in outputs or case.base not in outputs:
                continue
            for name, mine in outputs[case.name].items():
                base = outputs[case.base][name]
                if case.base_rows:
                    base = base[case.base_rows[0] : case.base_rows[1]]
                where = case.unchanged_mask(name, tuple(mine.shape))
                if not close(mine, base, where, equal_nan=True, tolerance=case.tolerance):
                    delta = (mine - base).abs()[where].nan_to_num(nan=math.inf).max().item()
                    seen.leaks[case.check].append((ci, msg("leak.moved", case=case.name, delta=delta)))
                    if case.check == "eval":
                        self.random_configs.add(ci)
                    break

    def _gradients_of(self, data: ConfigReply, seen: "Seen") -> None:
        """What the child found of the gradients of config ``data.index`` (unjudged where its
        gradients case's outputs are already wrong)."""
        explained = self._grads_case_wrong(data.index)
        if explained is not None and self.grads_explained is None:
            self.grads_explained = explained
        if data.grads is not None:
            if data.grads.key == "probe.backward_raised":
                self.backward_error = data.grads.params
            elif data.grads.ok is False and explained is None:  # a wrong function: its gradients say nothing new
                seen.grads_missing.extend(data.grads.names)
            elif data.grads.ok is None:
                seen.grads_failed.append(Message(data.grads.key, data.grads.params))
        if data.grad_values and self.grad_problem is None and explained is None:
            self.grad_problem = self._compare_grads(data)

    # --- the rows -------------------------------------------------------------------------------

    def _output_check(self, seen: "Seen") -> Check:
        if seen.mismatches:
            return Check("output", False, msg("check.output.bad", bad=seen.mismatches, total=seen.total,
                                              case=self.failed_cases[0].case.name))
        return Check("output", True, msg("check.output.ok", total=seen.total))

    def _inputs_check(self, seen: "Seen") -> Check:
        if seen.mutated:
            self.mutated = seen.mutated[0]
            return Check("inputs", False, msg("check.inputs.bad", case=self.mutated[0], names=", ".join(self.mutated[1:])))
        return Check("inputs", True, msg("check.inputs.ok"))

    def _leak_checks(self, seen: "Seen") -> list[Check]:
        """The causality, padding, batch and eval rows the kind probes; a leak that randomness in
        eval mode explains is not judged (and counts as no leak)."""
        rows = []
        for name in ("causality", "padding", "batch", "eval"):
            if name not in self.kind.probes:
                continue
            problems = seen.leaks[name]
            if problems and name in LEAK_CHECKS and seen.leaks["eval"]:
                # randomness explains any change, except in a config whose outputs are not random
                problems = seen.leaks[name] = [(ci, p) for ci, p in problems if ci not in self.random_configs]
                if not problems:
                    rows.append(Check(name, None, msg("check.not_judged_random")))
                    continue
            rows.append(Check(name, not problems, msg(f"check.{name}.bad", detail=problems[0][1]) if problems
                              else msg(f"check.{name}.ok")))
        return rows

    def _gradients_check(self, configs: list[ConfigReply], seen: "Seen") -> list[Check]:
        if "gradients" not in self.kind.probes:
            return []
        if self.backward_error is not None:
            params = dict(self.backward_error, text=_backward_text(self.backward_error))
            key = "check.gradients.raised" if "line" in params else "check.gradients.raised_no_line"
            return [Check("gradients", False, msg(key, **params))]
        if self.grad_problem is not None:
            return [Check("gradients", False, self.grad_problem)]
        if seen.grads_missing:
            return [Check("gradients", False, msg("check.gradients.bad", names=", ".join(sorted(set(seen.grads_missing)))))]
        if seen.grads_failed:
            return [Check("gradients", None, msg("check.gradients.not_run", detail=seen.grads_failed[0]))]
        if self.grads_explained is not None:
            return [Check("gradients", None, msg("check.gradients.outputs_wrong", case=self.grads_explained))]
        if self.kind.grads_of == "inputs":  # functions: the float inputs' gradients
            leaves = sorted((configs[0].grad_values or {}).get("grads", {}))
            return [Check("gradients", True, msg("check.gradients.ok_inputs", names=", ".join(leaves))
                          if leaves else msg("check.gradients.ok_any"))]
        return [Check("gradients", True, msg("check.gradients.ok"))]

    def _compare_grads(self, data: ConfigReply) -> Message | None:
        """The case run with gradients on: its outputs, then every gradient, against the reference's
        after the same backward (the graded outputs summed)."""
        case = grads_case(self.cases(data.index))
        with torch.enable_grad():
            expected = self.kind.reference_grads(data.index, frozenset(data.zero_bias), case)
        if expected is None:
            return None  # a kind that grades the presence of gradients only
        outputs, grads = expected
        for name, want in outputs.items():
            got = decode_tensor(data.grad_values.get("outputs", {}).get(name))
            where = case.mask(name, tuple(want.shape))
            if got is None or got.shape != want.shape or not close(got, want.detach().double(), where):
                self.grad_outputs_wrong = True
                return msg("check.gradients.outputs_differ", case=case.name)
        for name, want in grads.items():
            got = decode_tensor(data.grad_values.get("grads", {}).get(name))
            if got is None:
                continue  # no gradient at all: the presence check says so
            want = want.double()
            if got.shape != want.shape or not bool(torch.isclose(got, want, rtol=GRAD_RTOL, atol=GRAD_ATOL).all()):
                worst = float((got - want).abs().max()) if got.shape == want.shape else float("inf")
                return msg("check.gradients.differ", name=name, delta=worst)
        return None

    def _grads_case_wrong(self, ci: int) -> str | None:
        """The name of config ``ci``'s gradients case when its outputs (without gradients) are
        already wrong or of the wrong shape: then a gradient differs because the function does,
        which the output row says, and the gradients row judges nothing there."""
        cases = self.cases(ci)
        case = grads_case(cases)
        index = cases.index(case)
        return case.name if (ci, index) in self.failures or (ci, index) in self.shape_failures else None

    def _row_sum_check(self, data: ConfigReply) -> Check:
        sums = self._row_sums(data)
        if sums is None:
            return Check("softmax_rows", None, msg("check.softmax_rows.not_observed"))
        lo, hi = sums
        ok = abs(lo - 1) <= ROW_SUM_TOL and abs(hi - 1) <= ROW_SUM_TOL
        if ok:
            return Check("softmax_rows", True, msg("check.softmax_rows.ok"))
        if not self.failures and not self.shape_failures:
            # every output is the reference's: the tensor taken for the probabilities is not them,
            # the weights are normalised after the product (exp(s - max) @ v / sum, as FlashAttention
            # divides once at the end), and the rows are not observed
            return Check("softmax_rows", None, msg("check.softmax_rows.not_observed"))
        return Check("softmax_rows", False, msg("check.softmax_rows.bad", low=lo, high=hi))

    def _probs(self, data: ConfigReply | None, case: Case | None = None) -> torch.Tensor | None:
        """The attempt's attention probabilities on ``case`` (default: the observed case) as
        (B, H, T_q, T_k), or None when they were not recorded or have another size."""
        case = case or self.observed_case
        if data is None:
            return None
        if case.observe:
            raw = data.observed.probs if data.observed is not None else None
        else:
            raw = data.pictures.get(case.name)
        probs = decode_tensor(raw)
        if probs is None:
            return None
        B = case.queries.shape[0]
        Tq, Tk = case.seq
        if probs.dim() < 2 or probs.numel() % (B * Tq * Tk):
            return None
        return probs.reshape(B, -1, Tq, Tk)

    def _row_sums(self, data: ConfigReply):
        probs = self._probs(data)
        if probs is None:
            return None
        case = self.observed_case
        sums = probs.sum(-1)  # (B, H, T)
        graded = case.queries[:, None, :].expand(sums.shape)
        values = sums[graded].nan_to_num(nan=math.inf)
        return (float(values.min()), float(values.max()))

    # --- observation: heat-map, shapes --------------------------------------------------------

    def _heatmap(self, data: ConfigReply, zero_bias: frozenset, observed_ref) -> Heatmap | None:
        """One sample and head of the attention, from the case where the attempt's probabilities
        differ most from the reference's at graded query rows: among those with ``picture`` and the
        failing cases of the first config whose attention was recorded. A failing attempt whose
        attention matches the reference's wherever it was seen gets none (an identical picture
        shows nothing), nor does an attempt whose attention was not observed; a passing one gets
        the observed case. Sample 1 (0-based) of the padded cases has padded keys and queries."""
        best = None
        failing = {self.cases(0)[i].name for ci, i in self.failures if ci == 0}
        failed = bool(self.failures or self.shape_failures)
        candidates = [c for c in self.cases(0) if c.observe or (failed and (c.picture or c.name in failing))]
        # the cases made for the picture first (the observed one on a tie), then the other failing ones
        for case in sorted(candidates, key=lambda c: (not (c.picture or c.observe), c.name not in failing, not c.observe)):
            if best is not None and best[0] > SAME_PROBS and not (case.picture or case.observe):
                break
            B = case.queries.shape[0]
            Tq, Tk = case.seq
            ref = observed_ref
            if not case.observe:
                if case.name not in data.pictures:
                    continue

                def observe(case=case, Tq=Tq, Tk=Tk):
                    observer = Observer(Tq, Tk)
                    with observer, torch.no_grad():
                        self.kind.reference(0, zero_bias)(case)
                    return observer.obs

                ref = self._kept.pictured(zero_bias, case, observe)
            if ref.probs is None:
                continue
            got_all = self._probs(data, case)
            # sample 1 (padded keys and queries in the padded cases) unless only another differs
            for sample in ([1, 0, *range(2, B)] if B > 1 else [0]):
                expected = ref.probs.reshape(B, -1, Tq, Tk)[sample].double()  # (H, Tq, Tk)
                got = None if got_all is None else got_all[sample]
                head, score = 0, -1.0
                if got is not None and got.shape[0] == expected.shape[0]:
                    queries = case.queries[sample]
                    per_head = (got - expected)[:, queries].abs().nan_to_num(nan=9.0).flatten(1).max(1).values
                    head, score = int(per_head.argmax()), float(per_head.max())
                if score > SAME_PROBS:
                    break
            else:
                sample = 1 if B > 1 else 0
                expected = ref.probs.reshape(B, -1, Tq, Tk)[sample].double()
                got = None if got_all is None else got_all[sample]
            if best is None or score > best[0]:
                best = (score, case, sample, head, expected[head], None if got is None or head >= got.shape[0] else got[head])
        if best is None or best[5] is None or (failed and best[0] <= SAME_PROBS):
            return None
        _, case, sample, head, expected, got = best
        allowed = self.kind.allowed(case, sample)
        if allowed.dim() == 3:  # per head
            allowed = allowed[head]
        return Heatmap(
            sample=sample, head=head, case=case.name,
            expected=[[round(float(v), 4) for v in row] for row in expected],
            got=None if got is None else [[round(float(v), 4) for v in row] for row in got],
            allowed=[[bool(v) for v in row] for row in allowed],
            graded=[bool(v) for v in case.queries[sample]],
        )

    def _observed(self, data: ConfigReply):
        case = self.observed_case
        zero_bias = frozenset(data.zero_bias)

        def observe():
            observer = Observer(*case.seq)
            with observer, torch.no_grad():
                ref_out = self.kind.reference(0, zero_bias)(case)
            return ref_out, observer.obs

        ref_out, ref = self._kept.observed(zero_bias, case, observe)  # the same for every attempt: kept (read only)
        self._ref_scores = ref.scores
        heatmap = self._heatmap(data, zero_bias, ref)
        got_shapes = data.observed.shapes if data.observed is not None else {}
        shape_rows = []
        stages = self.kind.stages
        try:  # an attempt that runs one head (or one sample: vLLM's loop over sequences) at a time shows its stages
            axes = self.kind.axis_names(0, case)
            heads = tuple(v for k, v in axes.items() if k in ("H", "G", "B") and v > 1)
        except Exception:
            heads = ()
        for stage in stages:
            if stage in ref.shapes:
                got = tuple(got_shapes[stage]) if stage in got_shapes else None
                shape_rows.append(_shape_row(stage, tuple(ref.shapes[stage]), got, heads=heads))
        for name, want in ref_out.items():
            run = data.runs.get(case.name, {}).get(name, {})
            got = tuple(run["shape"]) if run.get("type") == "Tensor" else None
            shape_rows.append(_shape_row("output" if name == "out" else name, tuple(want.shape), got, strict=True))
        # softmax row sums only where the kind has a softmax to check (a norm's einsum('nd,nd->n', h, h)
        # is no probs @ v)
        return heatmap, tuple(shape_rows), self._row_sums(data) if "softmax_rows" in self.kind.probes else None

    # --- diagnosis ----------------------------------------------------------------------------

    def _diagnose(self, configs: list[ConfigReply]) -> list[Diagnosis]:
        """Keep the mistaken variants whose outputs the attempt reproduces on every case."""
        outputs = []
        for data in configs:
            per_case = {}
            for c in self.cases(data.index):
                if c.name in data.runs:
                    per_case[c.name] = (c, self._outputs(data, c))
            outputs.append((data, per_case))
        observed_name = self.observed_case.name
        # each config's zero biases and its cases, the observed one first: the same for every variant tried
        ordered = [(data, frozenset(data.zero_bias), sorted(cases.values(), key=lambda cg: cg[0].name != observed_name))
                   for data, cases in outputs]
        # outputs that are random in eval mode (dropout left on) reproduce no variant: when configs whose
        # outputs are not random fail too (a dropout rate of 0 there), the variants are judged on those
        # alone, so that a second mistake is named beside the dropout
        if self.random_configs and any(f.config not in self.random_configs for f in self.failed_cases):
            ordered = [o for o in ordered if o[0].index not in self.random_configs]

        failing_now = self._failing_of(configs)[0]  # the (config, case) pairs whose outputs are wrong

        def masking(knob) -> bool:  # a mask mistake is one of the knob's: a row it leaves no key is NaN
            return any(self._mistake(k).mask for k in ((knob,) if isinstance(knob, str) else knob))

        # (knob, all_positions, names, only) that -inf's outputs failed on where they are all finite:
        # a masked softmax gives exactly the same finite outputs with any large finite fill (-1e9),
        # so that fill fails there too and is not run (half the variant runs of a search that finds
        # nothing, for every kind whose variants take no fill at all)
        finite_fail: set[tuple] = set()

        differing = self._completed_differing  # a variant raising at a size is judged at the others

        def fails_alike(fill, want) -> bool:
            """A failure under the -inf fill of a variant whose output is finite everywhere: the -1e9 fill,
            which changes nothing there, fails alike (``finite_fail``)."""
            return isinstance(fill, float) and fill == -math.inf and isinstance(want, torch.Tensor) \
                and bool(torch.isfinite(want).all())

        def config_reproduces(data, zero_bias, order, knob, fill, key, all_positions, names, only):
            """True or False for one config's cases, or None when the variant raised there or made outputs
            of another shape than the attempt's."""
            call = self.kind.variant(data.index, zero_bias, knob, fill)
            for case, got_all in order:
                if only is not None and (data.index, case.name) not in only:
                    continue
                if names is not None:
                    got_all = {n: g for n, g in got_all.items() if n in names}
                if not got_all:
                    continue
                if any(g is None for g in got_all.values()):
                    return False
                try:
                    with torch.no_grad():  # outputs in order: a variant may make them as they are read
                        wanted = self._kept.variant(data.index, zero_bias, knob, fill, case, lambda: call(case))
                        for name, got in got_all.items():
                            want = wanted[name]
                            if isinstance(want, torch.Tensor) and want.shape != got.shape:
                                if differing is None and fails_alike(fill, want):
                                    finite_fail.add(key)  # a failure as before: the -1e9 fill fails alike
                                return None  # the variant cannot make this size's outputs (a broadcast gone wide)
                            if not same(case, got, want, name, all_positions):
                                if (data.index, case.name) not in failing_now and not all_positions \
                                        and masking(knob) and _rows_left_empty(case, got, want, name):
                                    continue  # a passed case where the mistake would leave a row no key
                                if fails_alike(fill, want):
                                    finite_fail.add(key)
                                return False
                except Exception as exc:  # noqa: BLE001 — a variant that cannot run here names nothing
                    if os.environ.get("ATTNPREP_DEBUG") and not _the_mistakes_own(exc, knob):
                        raise
                    return None
            return True

        def reproduces(knob, fill, all_positions=False, names=None, only=None) -> bool:
            key = (knob, all_positions, None if names is None else frozenset(names), None if only is None else frozenset(only))
            if isinstance(fill, float) and -math.inf < fill <= -1e4 and key in finite_fail:
                return False
            ran, raised = set(), set()
            for data, zero_bias, order in ordered:
                done = config_reproduces(data, zero_bias, order, knob, fill, key, all_positions, names, only)
                if done is None and differing is not None:
                    raised.add(data.index)
                elif not done:
                    return False
                else:
                    ran.add(data.index)
            # judged where the variant runs: the attempt's outputs differ wherever it raised, and at one size where it runs
            return not raised or (raised <= differing and bool(ran & differing))

        # (the attempt's output, case, name, all positions) -> (where, its values there, where they are not finite)
        graded: dict[tuple, tuple] = {}
        # (a variant's output, case, name, all positions) -> (that output, its values there as doubles, where they
        # are not finite): a variant's side is the same for every attempt compared with it (kept across grades
        # with the outputs, else for this search; the output is held, so its id names it)
        sides = kept_outputs.sides() if kept_outputs.keeping() else {}

        def same(case, got, want, name, all_positions) -> bool:
            if want.shape != got.shape:
                return False
            key = (id(got), case.name, name, all_positions)  # (outputs holds every got while this runs)
            if key not in graded:  # the attempt's side is the same for every variant compared with it
                where = torch.ones_like(got, dtype=torch.bool) if all_positions else case.mask(name, tuple(got.shape))
                where_np = _numpy_mask(where)  # [where, as numpy, its values as numpy, its values, where not finite]
                graded[key] = [where, where_np, _graded_doubles(got, where_np, (torch.float64,)), None, None]
            mine_side = graded[key]
            where, where_np = mine_side[0], mine_side[1]
            side = sides.get((id(want), case.name, name, all_positions))
            if side is None or side[0] is not want:  # [want, its graded values, where not finite, as numpy, bounds]
                side = sides[(id(want), case.name, name, all_positions)] = [want, None, None, _graded_doubles(want, where_np), {}]
            rtol, atol = case.tolerance or (RTOL, ATOL)
            if mine_side[2] is not None and side[3] is not None:  # finite doubles both: torch.isclose's test, in numpy
                return _close_finite(mine_side[2], side[3], side[4], rtol, atol)
            if mine_side[3] is None:
                mine = got[where]
                mine_side[3], mine_side[4] = mine, ~torch.isfinite(mine)
            if side[1] is None:
                theirs = want.double()[where]
                side[1], side[2] = theirs, ~torch.isfinite(theirs)
            mine, mine_over, theirs, theirs_over = mine_side[3], mine_side[4], side[1], side[2]
            # an overflow is an overflow: where the variant is inf or NaN, an attempt that is inf or NaN
            # there too reproduces it (the same exp overflow read through a one-hot product, inf * 0,
            # is NaN where the variant's gather keeps inf)
            overflow = theirs_over & mine_over
            return bool((torch.isclose(mine, theirs, rtol=rtol, atol=atol, equal_nan=True) | overflow).all())

        matched = [k for k in self.kind.knobs() if any(reproduces(k, f) for f in variants.FILLS)]
        mask_fills: dict[str, variants.MaskFills] = {}  # knob -> the per-mask fills it matched with
        if not matched and self.failed_cases and self.kind.mask_fills:
            # each mask with its own fill, or both added as biases (mask mistakes only, failures only)
            fills = variants.MASK_FILLS
            by_fill = {k: next((f for f in fills if reproduces(k, f)), None) for k in self.kind.knobs()
                       if self._mistake(k).mask}
            matched = [k for k, f in by_fill.items() if f is not None]
            mask_fills.update((k, f) for k, f in by_fill.items() if f is not None)
        else:
            fills = variants.FILLS
        if len(matched) > 1:  # ties on the graded positions: the padded rows decide
            strict = [k for k in matched if any(reproduces(k, f, all_positions=True) for f in fills)]
            if not strict and fills is variants.FILLS and self.kind.mask_fills:
                # the padded rows made by masks with fills of their own, or added as biases
                # (finfo.min + finfo.min is -inf where two additive masks meet)
                strict = [k for k in matched if self._mistake(k).mask
                          and any(reproduces(k, f, all_positions=True) for f in variants.MASK_FILLS)]
            if not strict:  # a mistake confined to some cases: the padded rows of those cases decide
                failing = self._failing_of(configs)[0]
                strict = [k for k in matched if any(reproduces(k, f, all_positions=True, only=failing) for f in fills)]
            matched = strict or matched
        found: list[Diagnosis] = []
        seen = set()
        # two knobs at once, for kinds whose variants take them, and only for outputs that differ
        whole = {k.split(":")[0] for k in self.kind.knobs()}
        # a mistake the grader saw directly (a mask function's own values, a cache of the new tokens
        # only) is one of the two: a pair without it that happens to compute the same outputs is
        # another story, not this one. With wrong shapes, only such a pair is looked for (the shapes
        # a seen mistake makes, and the values of another one in the outputs of the right shape)
        observed = self._evidence_only(configs)  # the mistakes named without a variant, given below too
        seen_directly = {d.id for d in observed} & whole if not matched else set()
        if not matched and (self.failed_cases or self._completed_differ or self.shape_failures and seen_directly) \
                and self.kind.pair_knobs:
            pairs = self._pairs()
            if seen_directly:
                pairs = [p for p in pairs if seen_directly & {k.split(":")[0] for k in p}]
            pair = next((p for p in pairs if any(reproduces(p, f) for f in variants.FILLS)), None)
            if pair is None and self.failed_cases:
                # past the limit: the pairs with a mistake that alone explains some failing cases
                # (a query-only norm skip on every case without the causal mask, whose one future
                # key visible is the other mistake)
                tried = set(pairs)
                more = [p for p in self._pairs_of_partial(reproduces) if p not in tried]
                if seen_directly:
                    more = [p for p in more if seen_directly & {k.split(":")[0] for k in p}]
                pair = next((p for p in more if any(reproduces(p, f) for f in variants.FILLS)), None)
            if pair is not None and not any(reproduces(pair, f, all_positions=True) for f in variants.FILLS):
                # a tie on the graded positions (padding ignored vs masked on the query rows): the
                # pair with one of its knobs swapped that also matches the padded rows is the name
                ids = [k.split(":")[0] for k in pair]
                swaps = [(k, other) for other in pair for k in self.kind.knobs()
                         if k.split(":")[0] not in ids]
                pair = next((p for p in swaps if any(reproduces(p, f, all_positions=True) for f in variants.FILLS)), pair)
            if pair is not None:
                found.extend(self._pair_diagnoses(pair, configs))
                seen.update(d.id for d in found)
        if not matched and not found and self.failed_cases and self.kind.outputs_apart:
            found.extend(self._apart(outputs, reproduces, configs))
            seen.update(d.id for d in found)
        if not matched and not found and self.failed_cases:
            found.extend(self._case_group(reproduces, configs))
            seen.update(d.id for d in found)
        if not matched and not found and self.failed_cases and self.kind.outputs_by_call:
            found.extend(self._output_group(outputs, reproduces, configs))
            seen.update(d.id for d in found)
        for knob in matched:
            mistake_id = knob.split(":")[0]
            if mistake_id in seen:
                continue
            seen.add(mistake_id)
            evidence = self._evidence(mistake_id, knob, configs)
            if knob in mask_fills:
                evidence += (_fills_message(mask_fills[knob]),)
            found.append(Diagnosis(mistake_id, evidence + self._shows_in(configs)))
        for d in observed:
            if d.id not in seen:
                seen.add(d.id)
                found.append(d)
        made = {d.id for d in found}
        return [d for d in found if self._mistake(d.id).superseded_by not in made]

    def _apart(self, outputs, reproduces, configs: list[ConfigReply]) -> list[Diagnosis]:
        """Each object's outputs explained on their own (an RMSNorm and a LayerNorm, a softmax and the
        attention built on it, a rotary cache and the rotation by it), for kinds whose objects are graded on outputs of
        their own names: a wrong output named by the one mistake whose variant reproduces it on every
        case, that output alone, or by that mistake with one named for another output (an object
        that calls the other one). An output that no mistake (or several) explains is named nothing;
        the others still are."""
        names = list(dict.fromkeys(n for _, cases in outputs for _, got in cases.values() for n in got))
        if len(names) < 2:
            return []
        knobs = self.kind.knobs()
        fills = variants.FILLS
        wrong = [n for n in names if not any(reproduces("", f, names={n}) for f in fills)]
        named: dict[str, str] = {}  # output -> the knob that explains it alone
        for name in wrong:
            alone = [k for k in knobs if any(reproduces(k, f, names={name}) for f in fills)]
            if len(alone) > 1:  # ties on the graded positions: all positions decide
                alone = [k for k in alone if any(reproduces(k, f, True, {name}) for f in fills)] or alone
            if len({k.split(":")[0] for k in alone}) == 1:
                named[name] = alone[0]
        for name in wrong:
            if name in named or not self.kind.pair_knobs:
                continue
            with_other = [(o, k) for o in dict.fromkeys(named.values()) for k in knobs
                          if k.split(":")[0] != o.split(":")[0] and any(reproduces((o, k), f, names={name}) for f in fills)]
            if len({k.split(":")[0] for _, k in with_other}) == 1:
                named[name] = with_other[0][1]
        found, seen = [], set()
        for name in wrong:
            knob = named.get(name)
            if knob is None or knob.split(":")[0] in seen:
                continue
            seen.add(knob.split(":")[0])
            evidence = (msg("evidence.object_apart", output=name),) + self._evidence(knob.split(":")[0], knob, configs)[1:]
            found.append(Diagnosis(knob.split(":")[0], evidence))
        return found

    def _mistake(self, knob: str):
        """The mistake a knob (``id`` or ``id:part``) or a diagnosis is, as this exercise has it
        (:meth:`Exercise.mistake`): what the judge reads of it besides its words (``mask``,
        ``early_in_pairs``, ``evidence``, ``superseded_by``)."""
        return self.ex.mistake(knob.split(":")[0])

    def _shows_in(self, configs: list[ConfigReply]) -> tuple[Message, ...]:
        """Where a named mistake shows when that is a group of the cases (at most half of them:
        ignore_index set, top_p < 1, left padding …) and the others match the reference: the
        learner is told which inputs bring it out. Nothing when it shows (nearly) everywhere."""
        failing, total = self._failing_of(configs)
        if not failing or 2 * len(failing) > total:
            return ()
        return (self._case_group_message(failing, total),)

    def _failing_of(self, configs: list[ConfigReply]) -> tuple[set[tuple[int, str]], int]:
        """The failing (config, case) pairs, and how many cases the configs have in all."""
        return {(c.config, c.case.name) for c in self.failed_cases}, sum(len(self.cases(d.index)) for d in configs)

    def _case_group_message(self, failing: set, total: int) -> Message:
        """``evidence.case_group``: the failing cases by name (the first :data:`SHOWN_CASES` of
        them) and how many others match the reference."""
        names = list(dict.fromkeys(c.case.name for c in self.failed_cases))
        cases = Names(names[:SHOWN_CASES], more=len(names) > SHOWN_CASES)
        return msg("evidence.case_group", cases=cases, others=total - len(failing))

    def _case_group(self, reproduces, configs: list[ConfigReply]) -> list[Diagnosis]:
        """A mistake confined to a group of cases (positions ignored when given as (T,), honoured as
        (B, T); the padding ignored only when it is on the left): the wrong cases are exactly those
        the one mistake's variant reproduces, every other case matches the reference. Named with
        the cases it shows in; nothing when no mistake, or more than one, explains them."""
        failing, total = self._failing_of(configs)
        if len(failing) >= total:  # every case is wrong: no group, and no single mistake explained them all
            return []
        fills = variants.FILLS
        alone = [k for k in self.kind.knobs() if any(reproduces(k, f, only=failing) for f in fills)]
        if len({k.split(":")[0] for k in alone}) > 1:  # ties on the graded positions: all positions decide
            alone = [k for k in alone if any(reproduces(k, f, True, only=failing) for f in fills)] or alone
        if len({k.split(":")[0] for k in alone}) != 1:
            return []
        knob = alone[0]
        evidence = (self._case_group_message(failing, total),)
        return [Diagnosis(knob.split(":")[0], evidence + self._evidence(knob.split(":")[0], knob, configs)[1:])]

    def _output_group(self, outputs, reproduces, configs: list[ConfigReply]) -> list[Diagnosis]:
        """A mistake confined to some calls of a script (kinds whose case is a prefill and its decode
        steps, :attr:`Kind.outputs_by_call`): a decode step after a cache wrong, the prefill right. The
        wrong outputs are exactly what the one mistake's variant gives there, every other output
        matches the reference, as :meth:`_case_group` asks of whole cases. Nothing when no mistake, or
        more than one, explains them, or when every output of the failing cases is wrong. (Not for the
        outputs of one call, dq and dk of a backward: a variant right on one of them only is another
        mistake.)"""
        failing, _ = self._failing_of(configs)
        wrong: set[str] = set()
        every: set[str] = set()
        for data, cases in outputs:
            zero_bias = frozenset(data.zero_bias)
            reference = functools.cache(lambda ci=data.index, zb=zero_bias: self.kind.reference(ci, zb))
            for case, got_all in cases.values():
                if (data.index, case.name) not in failing:
                    continue
                with torch.no_grad():
                    wanted = self._kept.reference(data.index, zero_bias, case, lambda: reference()(case))
                for name, got in got_all.items():
                    if got is None or name not in wanted:
                        return []
                    every.add(name)
                    if not close(got, wanted[name].double(), case.mask(name, tuple(got.shape)), tolerance=case.tolerance):
                        wrong.add(name)
        if not wrong or wrong == every:
            return []
        fills = variants.FILLS
        alone = [k for k in self.kind.knobs() if any(reproduces(k, f, names=wrong, only=failing) for f in fills)]
        if len({k.split(":")[0] for k in alone}) > 1:  # ties on the graded positions: all positions decide
            alone = [k for k in alone if any(reproduces(k, f, True, names=wrong, only=failing) for f in fills)] or alone
        if len({k.split(":")[0] for k in alone}) != 1:
            return []
        knob = alone[0]
        return [Diagnosis(knob.split(":")[0], self._evidence(knob.split(":")[0], knob, configs) + self._shows_in(configs))]

    def _pairs(self) -> list[tuple[str, str]]:
        """Two knobs at once, masks and scales first, at most :data:`PAIR_LIMIT` of them; the
        pairs the catalogue names come first of all."""
        knobs = self.kind.knobs()
        whole = {k.split(":")[0] for k in knobs}
        named = list(dict.fromkeys(tuple(m.pair) for m in self.ex.mistakes if len(m.pair) == 2 and set(m.pair) <= whole))
        first = [k for k in knobs if self._mistake(k).early_in_pairs]
        rest = [k for k in knobs if k not in first]
        ordered = first + rest
        pairs = [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:] if a.split(":")[0] != b.split(":")[0]]
        # an exercise's own mistakes paired with each other first when it says so ([grading]
        # pairs_first): a long list of shared mask and scale knobs would otherwise fill the limit
        own = [k for k in knobs if k.split(":")[0] in set(self.kind.grading.pairs_first)]
        early = [(a, b) for i, a in enumerate(own) for b in own[i + 1:] if a.split(":")[0] != b.split(":")[0]]
        head = named + [p for p in early if p not in named]
        return (head + [p for p in pairs if p not in head])[:self.kind.pair_limit or PAIR_LIMIT]

    def _pairs_of_partial(self, reproduces) -> list[tuple[str, str]]:
        """Every pair of knobs with one that alone reproduces at least one failing case of the first
        failing config (the rest being the other mistake's doing), that knob first."""
        failing = sorted({(c.config, c.case.name) for c in self.failed_cases})
        first = [fc for fc in failing if fc[0] == failing[0][0]] if failing else []
        knobs = self.kind.knobs()
        partial = [k for k in knobs
                   if any(any(reproduces(k, f, only={fc}) for f in variants.FILLS) for fc in first)]
        return [(a, b) for a in partial for b in knobs if a.split(":")[0] != b.split(":")[0]]

    def _pair_diagnoses(self, pair: tuple[str, str], configs: list[ConfigReply]) -> list[Diagnosis]:
        """The catalogue's entry for the two mistakes together, or each of them. An entry that names
        how the pair came about (``observed``: a masked_fill whose result nothing used) is given only
        when the child saw it; otherwise the entry for the outcome (both masks ignored) is."""
        ids = tuple(k.split(":")[0] for k in pair)
        known = [m for m in self.ex.mistakes if tuple(m.pair) in (ids, ids[::-1])]
        for m in sorted(known, key=lambda m: not m.observed):  # the specific slip before the outcome
            if not m.observed:
                return [Diagnosis(m.id, (msg("evidence.pair_named", first=ids[0], second=ids[1]),))]
            count = max((getattr(c.observed, m.observed, 0) or 0 for c in configs if c.observed is not None), default=0)
            if count:
                return [Diagnosis(m.id, (msg("evidence.pair_named", first=ids[0], second=ids[1]),
                                         msg(f"evidence.{m.observed}", count=count)))]
        return [Diagnosis(ids[0], (msg("evidence.pair", other=ids[1]),)),
                Diagnosis(ids[1], (msg("evidence.pair", other=ids[0]),))]

    def _diagnose_completed(self, configs: list[ConfigReply], failed: int | None) -> tuple[Diagnosis, ...]:
        """An attempt that raised at some sizes may reproduce a named mistake at the sizes where it
        ran to the end (keys projected from x compute while d_context == d_model and raise after):
        name it from those configs, when their outputs differ from the reference."""
        done = [c for c in configs if c.index != failed]
        differing: set[int] = set()
        for data in done:
            reference = self.kind.reference(data.index, frozenset(data.zero_bias))
            for case in self.cases(data.index):
                got_all = self._outputs(data, case)
                if not got_all or any(g is None for g in got_all.values()):
                    return ()
                with torch.no_grad():
                    wanted = reference(case)
                for name, got in got_all.items():
                    want = wanted[name].double()
                    if got.shape != want.shape or not close(got, want, case.mask(name, tuple(got.shape))):
                        differing.add(data.index)
        if not differing:
            return ()
        self._completed_differ = True  # the pair search runs on these configs' outputs (no failed case was compared)
        named = self._diagnose(done)
        if not named:
            # a mistake whose variant cannot run at some of these sizes (a padding mask put on the query rows
            # of a cross-attention raises when T != S): the attempt made its shapes fit there (a slice) and
            # computed something else. Judged at the sizes where the variant runs, when the attempt's outputs
            # differ at every size where it raises and at one where it runs
            self._completed_differing = differing
            try:
                named = self._diagnose(done)
            finally:
                self._completed_differing = None
        return tuple(named)

    def _diagnose_raised(self, configs: list[ConfigReply], failed: int | None) -> tuple[Diagnosis, ...]:
        """An attempt that raised on a case where the reference runs: the one mistake whose variant
        raises on that case too, and reproduces every case that ran before it (a hard-coded -100
        keeps the targets of another ignore_index, and indexing by them raises)."""
        data = next((c for c in configs if c.index == failed), None)
        if data is None:
            return ()
        zero_bias = frozenset(data.zero_bias)
        cases = self.cases(data.index)
        raised = next((c for c in cases if c.name not in data.runs), None)
        if raised is None:
            return ()
        with torch.no_grad():
            try:
                self.kind.reference(data.index, zero_bias)(raised)
            except Exception:  # noqa: BLE001 — the reference raising there too is no mistake's doing
                return ()
        ran = [(d, c) for d in configs for c in self.cases(d.index) if c.name in d.runs]
        found = []
        for knob in self.kind.knobs():
            call = self.kind.variant(data.index, zero_bias, knob, variants.FILLS[0])
            try:
                with torch.no_grad():
                    call(raised)
                continue  # the variant runs where the attempt raised
            except Exception:  # noqa: BLE001 — it raises there as the attempt does
                pass
            if all(self._reproduced(d, c, knob) for d, c in ran):
                found.append(knob)
        if len({k.split(":")[0] for k in found}) != 1:
            return ()
        knob = found[0]
        return (Diagnosis(knob.split(":")[0], (msg("evidence.raised_too", case=raised.name),)
                          + self._evidence(knob.split(":")[0], knob, configs)[1:]),)

    def _reproduced(self, data: ConfigReply, case: Case, knob: str) -> bool:
        """The variant of ``knob`` computes the attempt's outputs of ``case`` (any fill)."""
        got_all = self._outputs(data, case)
        if not got_all or any(g is None for g in got_all.values()):
            return False
        zero_bias = frozenset(data.zero_bias)
        for fill in variants.FILLS:
            call = self.kind.variant(data.index, zero_bias, knob, fill)
            try:
                with torch.no_grad():
                    wanted = call(case)
            except Exception:  # noqa: BLE001 — a variant that cannot run here reproduces nothing
                continue
            if all(wanted[n].double().shape == g.shape
                   and close(g, wanted[n].double(), case.mask(n, tuple(g.shape)), equal_nan=True, tolerance=case.tolerance)
                   for n, g in got_all.items()):
                return True
        return False

    def _evidence(self, mistake_id: str, knob: str, configs: list[ConfigReply]) -> tuple[Message, ...]:
        evidence = [msg("evidence.variant")]
        if ":" in knob:
            evidence.append(msg("evidence.sub_variant", variant=msg(f"variant.{knob}", part=knob.split(":", 1)[1])))
        obs = configs[0].observed if configs else None
        shows = self._mistake(mistake_id).evidence  # what the catalogue says this mistake's evidence is
        if "softmax_dim" in shows and obs is not None and obs.softmax_dims:
            dim, ndim = obs.softmax_dims[0]
            evidence.append(msg("evidence.softmax_dim", dim=dim, ndim=ndim))
        if "score_ratio" in shows:
            ratio = self._score_ratio(obs)
            if ratio is not None:  # on the observed case of the first config: say which (a factor is per size)
                config = ", ".join(f"{k}={v}" for k, v in self.kind.config_params(0).items())
                evidence.append(msg("evidence.score_ratio_on", ratio=ratio, case=self.observed_case.name, config=config))
        sums = self._row_sums(configs[0]) if configs else None
        if sums and "row_sums" in shows:
            evidence.append(msg("evidence.row_sums", low=sums[0], high=sums[1]))
        return tuple(evidence)

    def _score_ratio(self, obs) -> float | None:
        """Median ratio of the attempt's softmax input to the reference's, where both are real."""
        ref = self._ref_scores
        got = decode_tensor(obs.scores) if obs is not None else None
        if ref is None or got is None:
            return None
        ref = ref.double()
        if got.numel() != ref.numel():
            return None
        got = got.reshape(ref.shape)
        usable = torch.isfinite(got) & torch.isfinite(ref) & (ref.abs() > 1e-3) & (got.abs() < 1e8)
        if not usable.any():
            return None
        return float((got[usable] / ref[usable]).median())

    def _evidence_only(self, configs: list[ConfigReply]) -> list[Diagnosis]:
        """Mistakes named from what was observed, without an output variant: each generic probe that
        failed names the mistakes that declare it (``shown_by`` in the catalogue) and the exercise
        lists (or that say ``any_exercise``); then what the kind itself names from its extra reply."""
        shown = self._probes_failed(configs)
        listed = {m.id for m in self.ex.mistakes}
        catalogue = mistake_catalogue()
        named = {p: [Diagnosis(m.id, shown[p]) for m in catalogue.values()
                     if m.shown_by == p and (m.id in listed or m.any_exercise)] for p in shown}
        found = [d for p in SHOWN_BY[:-1] for d in named.get(p, [])]
        if configs and configs[0].extra is not None:  # the kind's own, before the softmax's dim
            found.extend(d for d in self.kind.extra_diagnoses(configs[0].extra) if d.id in listed)
        return found + named.get(SHOWN_BY[-1], [])

    def _probes_failed(self, configs: list[ConfigReply]) -> dict[str, tuple]:
        """The generic probes (:data:`SHOWN_BY`) that failed, each with its evidence."""
        shown: dict[str, tuple] = {}
        eval_failed = any(c.id == "eval" and c.passed is False for c in self.checks)
        dropout_seen = any(d.observed is not None and d.observed.dropout_in_eval for d in configs)
        if eval_failed or dropout_seen:
            shown["eval"] = (msg("evidence.dropout_called"),) * dropout_seen + (msg("evidence.eval_differs"),) * eval_failed
        if self.mutated is not None:
            shown["input_modified"] = (msg("evidence.input_modified", case=self.mutated[0], names=", ".join(self.mutated[1:])),)
        # autograd's own words (torch does not translate them): a tensor it saved was changed in place
        if self.backward_error is not None and "inplace operation" in str(self.backward_error.get("text", "")):
            shown["backward_inplace"] = (msg("evidence.backward_raised", type=self.backward_error.get("type"),
                                             text=_backward_text(self.backward_error)),)
        device = next((c for c in self.checks if c.id == "device" and c.passed is False), None)
        if device is not None:
            shown["device"] = (device.message.params["detail"],)
        dtype = next((c for c in self.checks if c.id == "dtype" and c.passed is False), None)
        if dtype is not None:
            shown["dtype"] = (dtype.message,)
        obs = configs[0].observed if configs else None
        dims = obs.softmax_dims if obs is not None else []
        if dims:
            dim, ndim = dims[0]
            if isinstance(dim, int) and ndim and dim not in (-1, ndim - 1):
                shown["softmax_dim"] = (msg("evidence.softmax_dim_keys", dim=dim, ndim=ndim),)
        return shown


def _rows_left_empty(case: Case, got: torch.Tensor, want: torch.Tensor, name: str) -> bool:
    """A mask mistake's variant output that differs from a case the attempt passed only where the
    variant is NaN: the mistake would leave those query rows no key at all (the diagonal masked at
    T = 1), where the three correct fills disagree (SPEC §1), and an attempt that guards the mask
    there (``if seqlen > 1``, Llama's and DeepSeek's habit) computes the reference's values. Such a
    case says nothing against the mistake; every case the attempt fails must still be the variant's."""
    if not isinstance(want, torch.Tensor) or want.shape != got.shape:
        return False
    where = case.mask(name, tuple(got.shape))
    empty = torch.isnan(want) & where
    if not bool(empty.any()):
        return False
    rest = where & ~empty
    rtol, atol = case.tolerance or (RTOL, ATOL)
    return bool(torch.isclose(got.double()[rest], want.double()[rest], rtol=rtol, atol=atol).all()) \
        and bool(torch.isfinite(got[empty]).all())


def _backward_text(error: dict) -> str:
    """Autograd's message of a failed backward, without its "Hint:" paragraph."""
    return str(error.get("text", "")).split(" Hint:")[0]


@dataclass
class Seen:
    """What the comparisons of every config found, for the rows and the verdict."""

    shape_problems: list[Message] = field(default_factory=list)
    dtype_problems: list[Message] = field(default_factory=list)
    nonfinite: list[str] = field(default_factory=list)  # cases with a non-finite graded output
    # check -> (config, what moved) of each leak found
    leaks: dict[str, list[tuple[int, Message]]] = field(default_factory=lambda: {k: [] for k in LEAK_CHECKS + ("eval",)})
    grads_missing: list[str] = field(default_factory=list)
    grads_failed: list[Message] = field(default_factory=list)
    device_fail: list[Message] = field(default_factory=list)
    device_skip: list[Message] = field(default_factory=list)
    extra_checks: list[Check] = field(default_factory=list)
    mutated: list[list[str]] = field(default_factory=list)  # [case, input names …] changed in place
    mismatches: int = 0  # cases whose outputs differ from the reference's
    total: int = 0  # cases compared


def _shapes_check(seen: Seen) -> Check:
    problems = seen.shape_problems
    return Check("shapes", not problems, problems[0] if problems else msg("check.shapes.ok"))


def _dtype_check(seen: Seen) -> Check:
    problems = seen.dtype_problems
    return Check("dtype", not problems, problems[0] if problems else msg("check.dtype.ok"))


def _finite_check(seen: Seen) -> Check:
    # names quoted: a case's own name may hold a comma ('is_causal, later keys changed')
    cases = Names(seen.nonfinite[:3], quoted=True)
    return Check("finite", not seen.nonfinite, msg("check.finite.bad", cases=cases) if seen.nonfinite else msg("check.finite.ok"))


def _device_check(configs: list[ConfigReply], seen: Seen) -> list[Check]:
    if seen.device_fail:
        return [Check("device", False, msg("check.device.bad", detail=seen.device_fail[0]))]
    if seen.device_skip:
        return [Check("device", None, msg("check.device.not_run", detail=seen.device_skip[0]))]
    if configs and configs[0].device is not None:
        return [Check("device", True, msg("check.device.ok"))]
    return []


def _merged(checks: list[Check]) -> list[Check]:
    """One row per check id of a kind's own: the first failure, else the first."""
    merged: dict[str, Check] = {}
    for check in checks:
        if check.id not in merged or (merged[check.id].passed is not False and check.passed is False):
            merged[check.id] = check
    return list(merged.values())


def _only_gradients(judge: Judge, failed: list[Check]) -> bool:
    """Every output right, with gradients on too: only a gradient is missing or wrong."""
    return bool(failed) and all(c.id == "gradients" for c in failed) and judge.backward_error is None \
        and not judge.grad_outputs_wrong


# The verdict of the compared outputs (shapes aside, decided first): the first row that holds.
VERDICT_ORDER: tuple[tuple[Verdict, Callable[[Judge, Seen, list[Check]], bool]], ...] = (
    (Verdict.MASK_LEAK, lambda judge, seen, failed: any(seen.leaks[k] for k in LEAK_CHECKS)),
    (Verdict.ERROR, lambda judge, seen, failed: bool(seen.device_fail)),
    (Verdict.GRADIENTS, lambda judge, seen, failed: _only_gradients(judge, failed)),
    (Verdict.WRONG_OUTPUT, lambda judge, seen, failed: any(not c.id.startswith(STRUCTURE) for c in failed)),
    (Verdict.STRUCTURE, lambda judge, seen, failed: bool(failed)),  # right outputs, wrong structure
    (Verdict.PASSED, lambda judge, seen, failed: True),
)


def _a_pair(named: tuple[Diagnosis, ...]) -> bool:
    """Whether the first two diagnoses are two mistakes named together (each the other's pair)."""
    return len(named) >= 2 and all(d.evidence and d.evidence[0].key == "evidence.pair" for d in named[:2])


def _fills_message(fills: variants.MaskFills) -> Message:
    """What the two masks were filled with, as the matching variant fills them."""
    def shown(f):
        return "finfo.min" if f is None else "-inf" if f == -math.inf else "-1e9" if f == -1e9 else f"{f:g}"
    return msg(f"evidence.mask_fills.{fills.order}", padding=shown(fills.padding), causal=shown(fills.causal))


def same_layout_family(expected: tuple, got: tuple) -> bool:
    """Whether ``got`` can hold ``expected``'s numbers in a layout a correct attempt may use: its axes
    permuted, adjacent axes merged or split (``(B, T, H, D)``, ``(B*H, T, D)``, ``(B, G, n, T, D)``)."""
    from attnprep.grader.divergence import _refines

    squeezed = tuple(g for g in got if g != 1)
    if squeezed != tuple(got) and len(squeezed) > 1 and same_layout_family(expected, squeezed):
        return True  # an axis of one to broadcast over (K/V of a group as (B, G, 1, T, D))
    if len(expected) > 5:
        return tuple(expected) == tuple(got)
    if math.prod(expected) != math.prod(got):
        # K/V shared by groups of query heads (GQA, MQA): one axis smaller by a factor, broadcast
        # (either side may hold the shared heads: the reference's or the attempt's expand/repeat)
        if len(expected) != len(got):
            return False
        return any(sum(e != g for e, g in zip(perm, got)) == 1 and all(e % g == 0 or g % e == 0 for e, g in zip(perm, got))
                   for perm in itertools.permutations(expected))
    for perm in itertools.permutations(expected):
        if _refines(perm, tuple(got)) or _refines(tuple(got), perm):
            return True
    return False


FEATURE_AXIS = {"q": -1, "k^T": -2}  # the head-feature axis of a stage's expected shape


def feature_part(expected: tuple, got: tuple, axis: int) -> bool:
    """Whether ``got`` is a part of ``expected``'s head features, in a layout of its family: MLA's
    scores written as q_nope·k_nopeᵀ + q_pe·k_peᵀ show q_pe, e.g. (B*H, T, R) for (B, H, T, N + R) with N
    features without position and R rotated ones."""
    size = expected[axis]
    part, rest = divmod(math.prod(got) * size, math.prod(expected))
    if rest or not 0 < part < size:
        return False
    smaller = list(expected)
    smaller[axis] = part
    return same_layout_family(tuple(smaller), tuple(got))


def one_head(expected: tuple, got: tuple, heads: tuple[int, ...]) -> bool:
    """Whether ``got`` is one head's part of ``expected`` in a layout of its family: an attempt
    that runs each head by itself (a ModuleList of heads) shows (B, T, T) for (B, H, T, T). Or one
    sample's part (the batch, a reference stage's first axis, looped over), or one sample's head:
    (H, T, T) or (T, T) for (B, H, T, T), as a loop over the batch, or over (batch, head), shows."""
    def head(expected: tuple) -> bool:
        return any(size in heads and (tuple(got) == smaller or same_layout_family(smaller, tuple(got)))
                   for i, size in enumerate(expected) for smaller in [tuple(expected[:i]) + tuple(expected[i + 1:])])

    sample = tuple(expected[1:])
    return head(tuple(expected)) or (len(expected) > 2 and (
        tuple(got) == sample or same_layout_family(sample, tuple(got)) or head(sample)))


def _shape_row(stage: str, expected: tuple, got: tuple | None, strict: bool = False, heads: tuple[int, ...] = ()) -> ShapeRow:
    if got is None:
        return ShapeRow(stage, tuple(expected), None)
    equivalent = not strict and tuple(got) != tuple(expected) and (
        same_layout_family(tuple(expected), tuple(got))
        or (stage in FEATURE_AXIS and feature_part(tuple(expected), tuple(got), FEATURE_AXIS[stage]))
        or one_head(tuple(expected), tuple(got), heads))
    return ShapeRow(stage, tuple(expected), tuple(got), equivalent=equivalent)
