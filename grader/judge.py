"""The parent's side: recompute the reference, compare, run the checks, name the mistake.

Everything the child sent is plain data; nothing it computed about the reference is trusted.
Verdict precedence: contract > used a built-in > error > wrong shape > mask leak > wrong output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnprep.grader import variants
from attnprep.grader.cases import Case
from attnprep.grader.observe import Observer
from attnprep.grader.result import Check, Diagnosis, ErrorInfo, Heatmap, Result, ShapeRow, Verdict

RTOL, ATOL = 1e-4, 1e-5  # float32 attention of a few dozen terms; real mistakes are far above
ROW_SUM_TOL = 1e-4
LEAK_CHECKS = ("causality", "padding", "batch")


@dataclass
class Compared:
    case: Case
    config: int
    ok: bool
    summary: str


def tensor_of(run: dict) -> torch.Tensor | None:
    if run.get("type") != "Tensor" or run.get("values") is None:
        return None
    return torch.tensor(run["values"], dtype=torch.float64).reshape(run["shape"])


def graded_mask(case: Case, shape: tuple[int, ...], token_axis: int) -> torch.Tensor:
    view = [1] * len(shape)
    view[0], view[token_axis] = case.graded.shape
    return case.graded.reshape(view).expand(shape)


def rows_mask(positions: torch.Tensor, shape, token_axis: int) -> torch.Tensor:
    view = [1] * len(shape)
    view[0], view[token_axis] = positions.shape
    return positions.reshape(view).expand(shape)


def close(got: torch.Tensor, want: torch.Tensor, where: torch.Tensor, equal_nan: bool = False) -> bool:
    return bool(torch.isclose(got[where], want[where], rtol=RTOL, atol=ATOL, equal_nan=equal_nan).all())


def diff_summary(got: torch.Tensor, want: torch.Tensor, where: torch.Tensor) -> str:
    """torch.testing.assert_close's order: mismatched count, then the greatest differences."""
    g, w = got.clone(), want.clone()
    bad = ~torch.isclose(g, w, rtol=RTOL, atol=ATOL) & where
    total = int(where.sum())
    lines = [f"Mismatched elements: {int(bad.sum())} / {total} ({100 * int(bad.sum()) / max(total, 1):.1f}%)"]
    nonfinite = where & ~torch.isfinite(g)
    if nonfinite.any():
        idx = tuple(int(i) for i in nonfinite.nonzero()[0])
        lines.append(f"Non-finite output ({g[idx].item()}) at index {idx}")
    finite = where & torch.isfinite(g) & torch.isfinite(w)
    if finite.any():
        absdiff = torch.where(finite, (g - w).abs(), torch.zeros_like(g))
        idx = tuple(int(i) for i in (absdiff == absdiff.max()).nonzero()[0])
        rel = absdiff / w.abs().clamp_min(1e-12)
        ridx = tuple(int(i) for i in (rel == rel[finite].max()).nonzero()[0])
        lines.append(f"Greatest absolute difference: {absdiff[idx]:.3g} at index {idx} (up to {ATOL:g} allowed)")
        lines.append(f"Greatest relative difference: {rel[ridx]:.3g} at index {ridx} (up to {RTOL:g} allowed)")
    return "\n".join(lines)


class Judge:
    def __init__(self, exercise, driver, reply: dict, path, duration: float):
        self.ex, self.driver, self.reply, self.path = exercise, driver, reply, path
        self.duration = duration
        self.checks: list[Check] = []
        self.failed_cases: list[Compared] = []
        self._cases: dict[int, list[Case]] = {}

    def cases(self, ci: int) -> list[Case]:
        """The driver's cases of config ``ci``, drawn once (drawing seeds and builds tensors)."""
        if ci not in self._cases:
            self._cases[ci] = self.driver.cases(ci)
        return self._cases[ci]

    @property
    def observed_case(self) -> Case:
        return next(c for c in self.cases(0) if c.observe)

    # --- entry --------------------------------------------------------------------------------

    def result(self) -> Result:
        reply = self.reply
        base = dict(exercise=self.ex.id, file=str(self.path), duration_s=self.duration)
        if reply.get("internal"):
            return Result(**base, verdict=Verdict.ERROR, internal=True,
                          error=ErrorInfo("internal", f"attnprep failed while grading: {reply['internal']}", reply.get("traceback", "")))
        builtins = reply.get("builtins") or []
        if reply.get("contract"):
            return Result(**base, verdict=Verdict.CONTRACT, checks=(Check("contract", False, reply["contract"]),))
        if builtins:
            d = self._diagnosis("used_builtin", f"observed: {', '.join(builtins)}")
            return Result(**base, verdict=Verdict.BUILTIN, checks=(Check("hand-written", False, f"used {', '.join(builtins)}"),), diagnoses=(d,))
        configs = reply.get("configs") or []
        first = configs[0] if configs else {}
        mapping = first.get("info", {}).get("mapping", {})
        notes = tuple(first.get("info", {}).get("notes", []))
        if reply.get("error"):
            e = reply["error"]
            checks = [Check("runs", False, e["message"])]
            return Result(**base, verdict=Verdict.ERROR, checks=tuple(checks), error=ErrorInfo(e["kind"], e["message"], e.get("traceback", "")),
                          mapping=mapping, mapping_notes=notes)
        self.checks.append(Check("contract", True, "by name" if first.get("info", {}).get("by_name", True) else "mapped by shape"))
        verdict = self._compare_all(configs)
        heatmap, shapes, row_sums = self._observed(configs[0])
        diagnoses: tuple[Diagnosis, ...] = ()
        if verdict is not Verdict.PASSED:
            diagnoses = tuple(self._diagnose(configs))
        output_diff = ""
        if self.failed_cases:
            c = self.failed_cases[0]
            output_diff = f"case {c.case.name!r} ({self.driver.describe_config(c.config)}):\n{c.summary}"
        return Result(**base, verdict=verdict, checks=tuple(self.checks), diagnoses=diagnoses, mapping=mapping,
                      mapping_notes=notes, shapes=shapes, heatmap=heatmap, row_sums=row_sums, output_diff=output_diff)

    # --- checks -------------------------------------------------------------------------------

    def _compare_all(self, configs: list[dict]) -> Verdict:
        axis = self.driver.token_axis
        shape_problems, dtype_problems, nonfinite, leaks = [], [], [], {k: [] for k in LEAK_CHECKS + ("eval",)}
        grads_missing, meta_fail, meta_skip, extra_checks = [], [], [], []
        mismatches = 0
        total = 0
        for ci, data in enumerate(configs):
            runs = data["runs"]
            info = data.get("info", {})
            reference = self.driver.reference(ci, set(info.get("zero_bias", [])))
            cases = self.cases(ci)
            outputs = {}
            for case in cases:
                run = runs.get(case.name, {})
                expected_shape = self.driver.expected_shape(case, ci)
                if run.get("type") != "Tensor":
                    shape_problems.append(f"forward returned a {run.get('type', 'nothing')}, expected a Tensor {expected_shape}")
                    continue
                if tuple(run["shape"]) != expected_shape:
                    shape_problems.append(f"{case.name}: got {tuple(run['shape'])}, expected {expected_shape}")
                    continue
                if run["dtype"] != "float32":
                    dtype_problems.append(f"{run['dtype']} for a float32 input")
                got = tensor_of(run)
                outputs[case.name] = got
                where = graded_mask(case, got.shape, axis)
                if not torch.isfinite(got[where]).all():
                    nonfinite.append(case.name)
                with torch.no_grad():
                    want = reference(case).double()
                total += 1
                if not close(got, want, where):
                    mismatches += 1
                    self.failed_cases.append(Compared(case, ci, False, diff_summary(got, want, where)))
            for case in cases:
                if case.base is None or case.name not in outputs or case.base not in outputs:
                    continue
                mine, base = outputs[case.name], outputs[case.base]
                if case.base_rows:
                    base = base[case.base_rows[0] : case.base_rows[1]]
                where = rows_mask(case.unchanged, mine.shape, axis)
                if not close(mine, base, where, equal_nan=True):
                    delta = (mine - base).abs()[where].nan_to_num(nan=math.inf).max().item()
                    leaks[case.check].append(f"{case.name}: outputs moved by up to {delta:.3g}")
            grads = data.get("grads", {})
            if grads.get("ok") is False:
                grads_missing.extend(grads.get("missing", []))
            meta = data.get("device")
            if meta is not None and meta.get("ok") is False:
                meta_fail.append(meta["message"])
            elif meta is not None and meta.get("ok") is None:
                meta_skip.append(meta["message"])
            extra = getattr(self.driver, "extra_checks", None)
            if extra is not None and "extra" in data:
                extra_checks.extend(extra(data["extra"]))

        add = self.checks.append
        add(Check("shapes", not shape_problems, shape_problems[0] if shape_problems else "every case has the expected output shape"))
        if shape_problems:
            return Verdict.WRONG_SHAPE
        add(Check("dtype", not dtype_problems, dtype_problems[0] if dtype_problems else "output keeps the input's dtype"))
        add(Check("output", mismatches == 0, f"{total - mismatches}/{total} cases match the reference" if mismatches == 0 else
                  f"{mismatches}/{total} cases differ from the reference (first: {self.failed_cases[0].case.name!r})"))
        add(Check("finite", not nonfinite, f"NaN/inf at graded positions in {', '.join(nonfinite[:3])}" if nonfinite else "no NaN or inf at graded positions"))
        descriptions = {
            "causality": ("changing future tokens leaves earlier outputs unchanged", "an earlier output depends on a future token"),
            "padding": ("changing padded tokens leaves real outputs unchanged", "a real output depends on a padded token"),
            "batch": ("a sample alone gives the same outputs as in its batch", "samples influence each other"),
            "eval": ("eval() outputs are deterministic (dropout off)", "outputs change between two eval() runs: dropout is active in eval"),
        }
        for name, (good, bad) in descriptions.items():
            problems = leaks[name]
            if problems and name in LEAK_CHECKS and leaks["eval"]:  # randomness explains any change
                add(Check(name, None, "not judged: the outputs are random in eval() (see eval)"))
                leaks[name] = []
                continue
            add(Check(name, not problems, f"{bad} ({problems[0]})" if problems else good))
        add(Check("gradients", not grads_missing, f"no gradient reaches {', '.join(sorted(set(grads_missing)))}" if grads_missing else "every parameter receives a gradient"))
        if meta_fail:
            add(Check("device", False, f"would fail on a GPU: {meta_fail[0]}"))
        elif meta_skip:
            add(Check("device", None, f"device placement not checked: {meta_skip[0]}"))
        elif configs and "device" in configs[0]:
            add(Check("device", True, "every tensor follows the input's device (GPU placement emulated)"))
        self.checks.extend(extra_checks)
        probs_check = self._row_sum_check(configs[0])
        if probs_check is not None:
            add(probs_check)
        if leaks["causality"] or leaks["padding"] or leaks["batch"]:
            return Verdict.MASK_LEAK
        if meta_fail:
            return Verdict.ERROR
        if any(c.passed is False for c in self.checks):
            return Verdict.WRONG_OUTPUT
        return Verdict.PASSED

    def _row_sum_check(self, data: dict) -> Check | None:
        sums = self._row_sums(data)
        if sums is None:
            return Check("softmax rows", None, "no attention probabilities observed")
        lo, hi = sums
        ok = abs(lo - 1) <= ROW_SUM_TOL and abs(hi - 1) <= ROW_SUM_TOL
        return Check("softmax rows", ok, f"rows sum to {lo:.4g}..{hi:.4g} over the keys" + ("" if ok else " (should be 1)"))

    def _probs(self, data: dict, case: Case | None = None) -> torch.Tensor | None:
        """The attempt's attention probabilities on ``case`` (default: the observed case) as
        (B, H, T, T), or None when they were not recorded or have another size."""
        case = case or self.observed_case
        if case.observe:
            raw = ((data or {}).get("observed") or {}).get("probs")
        else:
            raw = ((data or {}).get("pictures") or {}).get(case.name)
        if not raw:
            return None
        B, T = case.graded.shape
        probs = torch.tensor(raw, dtype=torch.float64)
        if probs.dim() < 2 or probs.numel() % (B * T * T):
            return None
        return probs.reshape(B, -1, T, T)

    def _row_sums(self, data: dict):
        probs = self._probs(data)
        if probs is None:
            return None
        case = self.observed_case
        sums = probs.sum(-1)  # (B, H, T)
        graded = case.graded[:, None, :].expand(sums.shape)
        values = sums[graded]
        values = values.nan_to_num(nan=math.inf)
        return (float(values.min()), float(values.max()))

    # --- observation: heat-map, shapes --------------------------------------------------------

    def _heatmap(self, data: dict, zero_bias: set, observed_ref) -> Heatmap | None:
        """One sample and head of the attention, from the case (among those with ``picture``) where
        the attempt's probabilities differ most from the reference's at graded query rows; the
        observed case on a tie. Sample 2 of the padded cases has both padded keys and padded queries.
        ``observed_ref`` is the reference's observation on the observed case, already made."""
        best = None
        for case in sorted((c for c in self.cases(0) if c.picture), key=lambda c: not c.observe):
            B, T = case.graded.shape
            ref = observed_ref
            if not case.observe:
                observer = Observer(T, T)
                with observer, torch.no_grad():
                    self.driver.reference(0, zero_bias)(case)
                ref = observer.obs
            if ref.probs is None:
                continue
            sample = 1 if B > 1 else 0
            expected = ref.probs.reshape(B, -1, T, T)[sample].double()  # (H, T, T)
            got_all = self._probs(data, case)
            got = None if got_all is None else got_all[sample]
            head, score = 0, -1.0
            if got is not None and got.shape[0] == expected.shape[0]:
                rows = case.graded[sample]
                per_head = (got - expected)[:, rows].abs().nan_to_num(nan=9.0).flatten(1).max(1).values
                head, score = int(per_head.argmax()), float(per_head.max())
            if best is None or score > best[0]:
                best = (score, case, sample, head, expected[head], None if got is None or head >= got.shape[0] else got[head])
        if best is None:
            return None
        _, case, sample, head, expected, got = best
        T = case.graded.shape[1]
        allowed = torch.ones(T, T, dtype=torch.bool)
        if case.is_causal:
            allowed = torch.tril(allowed)
        if case.attention_mask is not None:
            allowed = allowed & case.attention_mask[sample][None, :]
        return Heatmap(
            title=f"sample {sample + 1}, head {head + 1}, {case.name} (rows: queries, columns: keys)",
            expected=[[round(float(v), 4) for v in row] for row in expected],
            got=None if got is None else [[round(float(v), 4) for v in row] for row in got],
            allowed=[[bool(v) for v in row] for row in allowed],
            graded=[bool(v) for v in case.graded[sample]],
        )

    def _observed(self, data: dict):
        case = self.observed_case
        zero_bias = set(data.get("info", {}).get("zero_bias", []))
        T = case.graded.shape[1]
        observer = Observer(T, T)
        with observer, torch.no_grad():
            ref_out = self.driver.reference(0, zero_bias)(case)
        ref = observer.obs
        self._ref_scores = ref.scores
        heatmap = self._heatmap(data, zero_bias, ref)
        got_shapes = ((data.get("observed") or {}).get("shapes")) or {}
        rows = []
        for stage in ("q", "k^T", "scores", "attn", "attn @ v"):
            if stage in ref.shapes:
                exp = tuple(ref.shapes[stage])
                got = tuple(got_shapes[stage]) if stage in got_shapes else None
                rows.append(_shape_row(stage, exp, got))
        run = data["runs"].get(case.name, {})
        out_shape = tuple(run["shape"]) if run.get("type") == "Tensor" else None
        rows.append(_shape_row("output", tuple(ref_out.shape), out_shape, strict=True))
        return heatmap, tuple(rows), self._row_sums(data)

    # --- diagnosis ----------------------------------------------------------------------------

    def _diagnosis(self, mistake_id: str, evidence: str) -> Diagnosis:
        m = self.ex.mistake(mistake_id)
        return Diagnosis(m.id, m.title, m.why, m.fix, evidence)

    def _diagnose(self, configs: list[dict]) -> list[Diagnosis]:
        """Keep the mistaken variants whose outputs the attempt reproduces on every case."""
        found: list[Diagnosis] = []
        outputs = []
        for ci, data in enumerate(configs):
            outputs.append({c.name: (c, tensor_of(data["runs"][c.name])) for c in self.cases(ci) if c.name in data["runs"]})
        weights = []
        for ci, data in enumerate(configs):
            w = self.driver.role_weights(ci) if hasattr(self.driver, "role_weights") else {}
            for role in data.get("info", {}).get("zero_bias", []):
                w[role]["bias"] = torch.zeros_like(w[role]["bias"])
            weights.append(w)
        observed_case = self.observed_case

        def reproduces(knob, fill, all_positions=False) -> bool:
            for ci, cases in enumerate(outputs):
                call = variants.make_call(self.ex.id, self.driver.configs[ci], weights[ci], knob, fill)
                order = sorted(cases.values(), key=lambda cg: cg[0].name != observed_case.name)
                for case, got in order:
                    if got is None:
                        return False
                    with torch.no_grad():
                        want = call(case).double()
                    if want.shape != got.shape:
                        return False
                    where = torch.ones_like(got, dtype=torch.bool) if all_positions else graded_mask(case, got.shape, self.driver.token_axis)
                    if not close(got, want, where, equal_nan=True):
                        return False
            return True

        matched = [k for k in variants.knobs(self.ex) if any(reproduces(k, f) for f in variants.FILLS)]
        if len(matched) > 1:  # ties on the graded positions: the padded rows decide
            strict = [k for k in matched if any(reproduces(k, f, all_positions=True) for f in variants.FILLS)]
            matched = strict or matched
        seen = set()
        for knob in matched:
            mistake_id = knob.split(":")[0]
            if mistake_id in seen:
                continue
            seen.add(mistake_id)
            found.append(self._diagnosis(mistake_id, self._evidence(mistake_id, knob, configs)))
        for d in self._evidence_only(configs):
            if d.id not in seen:
                found.append(d)
        made = {d.id for d in found}
        return [d for d in found if variants.SUPERSEDED_BY.get(d.id) not in made]

    def _evidence(self, mistake_id: str, knob: str, configs: list[dict]) -> str:
        text = "outputs match the reference with exactly this mistake"
        if variants.note(knob):
            text += f" ({variants.note(knob)})"
        obs = (configs[0].get("observed") or {}) if configs else {}
        if mistake_id == "softmax_wrong_dim" and obs.get("softmax_dims"):
            dim, ndim = obs["softmax_dims"][0]
            text += f"; softmax(dim={dim}) observed on a {ndim}-d score tensor"
        if mistake_id in ("missing_scale", "scale_d_model", "scale_inverted", "scale_by_dim", "mla_scale_sum_sqrt",
                          "mla_scale_partial"):
            ratio = self._score_ratio(obs)
            if ratio is not None:
                text += f"; your scores are {ratio:.3g}× the reference's before the softmax"
        sums = self._row_sums(configs[0]) if configs else None
        if sums and mistake_id in ("softmax_wrong_dim", "mask_after_softmax"):
            text += f"; attention rows sum to {sums[0]:.3g}..{sums[1]:.3g}"
        return text

    def _score_ratio(self, obs: dict) -> float | None:
        """Median ratio of the attempt's softmax input to the reference's, where both are real."""
        ref = getattr(self, "_ref_scores", None)
        if ref is None or not obs.get("scores"):
            return None
        got = torch.tensor(obs["scores"], dtype=torch.float64)
        ref = ref.double()
        if got.numel() != ref.numel():
            return None
        got = got.reshape(ref.shape)
        usable = torch.isfinite(got) & torch.isfinite(ref) & (ref.abs() > 1e-3) & (got.abs() < 1e8)
        if not usable.any():
            return None
        return float((got[usable] / ref[usable]).median())

    def _evidence_only(self, configs: list[dict]) -> list[Diagnosis]:
        """Mistakes named from what was observed, without an output variant."""
        found = []
        ids = {m.id for m in self.ex.mistakes}
        eval_failed = any(c.name == "eval" and c.passed is False for c in self.checks)
        dropout_seen = any(((d.get("observed") or {}).get("dropout_in_eval")) for d in configs)
        if "dropout_in_eval" in ids and (eval_failed or dropout_seen):
            bits = []
            if dropout_seen:
                bits.append("dropout called with training=True while the module is in eval()")
            if eval_failed:
                bits.append("two eval() runs gave different outputs")
            found.append(self._diagnosis("dropout_in_eval", "; ".join(bits)))
        device = next((c for c in self.checks if c.name == "device" and c.passed is False), None)
        if device is not None and "tensor_without_device" in ids:
            found.append(self._diagnosis("tensor_without_device", device.detail))
        extra = getattr(self.driver, "extra_diagnoses", None)
        if extra is not None and configs and "extra" in configs[0]:
            for mistake_id, evidence in extra(configs[0]["extra"]):
                if mistake_id in ids:
                    found.append(self._diagnosis(mistake_id, evidence))
        obs = (configs[0].get("observed") or {}) if configs else {}
        dims = obs.get("softmax_dims") or []
        if "softmax_wrong_dim" in ids and dims:
            dim, ndim = dims[0]
            if isinstance(dim, int) and ndim and dim not in (-1, ndim - 1):
                found.append(self._diagnosis("softmax_wrong_dim", f"softmax(dim={dim}) observed on a {ndim}-d score tensor; the keys are the last dim"))
        return found


def _shape_row(stage: str, expected: tuple, got: tuple | None, strict: bool = False) -> ShapeRow:
    exp_text = str(tuple(expected))
    if got is None:
        return ShapeRow(stage, exp_text, "")
    equivalent = (not strict and math.prod(expected) == math.prod(got) and tuple(expected[-2:]) == tuple(got[-2:]))
    return ShapeRow(stage, exp_text, str(tuple(got)), equivalent=equivalent and tuple(got) != tuple(expected))
