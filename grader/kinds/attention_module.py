"""Kind ``attention_module``: an ``nn.Module`` whose ``forward(x, attention_mask, is_causal)``
returns ``(B, T, d_model)``.

The module is built from each graded config of the exercise; its parameters are mapped to the
contract's roles (by name, else by shape, see :mod:`attnprep.grader.weights`) and loaded with
seeded weights. When several same-shaped layers could play several roles, the child runs a probe
under each candidate mapping and asks the grading process which one computes the reference: the
reference itself never enters the child.

Mistakes are named edits of the reference solution (``[grading] edits``: knob -> a list of
``{old, new}`` replacements, each ``old`` found exactly once in ``solutions/<id>.py``; two knobs at
once are both edits, and two edits of the same text clash, which names nothing), built with the
seeded weights (:class:`attnprep.grader.edits.MaskFilledReference`). Every variant is tried with
the reference's mask fill (``fill``, as written: ``float("-inf")``) and with -1e9; where no mistake
explains the outputs with one fill, the mask mistakes are tried with a fill per mask: ``fill_sites``
names the masks the reference fills, in its order, by the words of each masked_fill's mask.

Exercise data (``[grading]``, :class:`AttentionGrading`): ``configs``; ``kv_heads``; ``knobs``, the
mistakes tried, in order; ``edits``, ``fill`` and ``fill_sites``.
"""

from __future__ import annotations

import ast
import inspect
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

from attnprep import exercises
from attnprep.grader import observe, variants
from attnprep.grader import weights as W
from attnprep.grader.edits import MaskFilledReference, fill_text, knobs_of
from attnprep.grader.cases import Case, SequenceCase, rows, sequence_cases, to_case
from attnprep.grader.kinds.base import Built, ContractError, Grading, Kind, ModuleConfig, first
from attnprep.grader.result import MappingNote
from attnprep.grader.tensors import ATOL, RTOL, decode_tensor, encode_tensor


def arg_names(signature: str) -> list[str]:
    fn = ast.parse(f"def f({signature}): pass").body[0]
    return [a.arg for a in fn.args.args]


def arg_defaults(signature: str) -> dict[str, Any]:
    """The literal defaults of an argument list written as Python: {"d_context": None, …}."""
    args = ast.parse(f"def f({signature}): pass").body[0].args
    names = [a.arg for a in args.args]
    return dict(zip(names[len(names) - len(args.defaults):], (ast.literal_eval(d) for d in args.defaults)))


def roles_text(exercise) -> str:
    return ", ".join(f"{p.name}: {p.describe()}" for p in exercise.contract.params)


def _described(mapping: W.Mapping) -> list:
    """A candidate mapping as plain data, the same for the same candidate in any child."""
    return [sorted(mapping.layers.items()), sorted(mapping.zero_bias), sorted(mapping.transposed),
            sorted((role, [[layer, list(rows)] for layer, rows in pieces]) for role, pieces in mapping.rows.items())]


class _Candidates:
    """The probe outputs a child computed under each candidate mapping (a mapping question),
    stacked by bias set and shape so that each is compared with a wanted output in one go: a
    module of bare matrices can have hundreds of candidates, each tried against every variant."""

    def __init__(self, question: dict):
        groups: dict[tuple, list] = {}
        for index, (zero_bias, encoded) in enumerate(zip(question["zero_bias"], question["outputs"])):
            got = decode_tensor(encoded)
            if got is not None:
                groups.setdefault((frozenset(zero_bias), tuple(got.shape)), []).append((index, got))
        self.groups = [(key[0], [i for i, _ in rows], torch.stack([g.double() for _, g in rows]))
                       for key, rows in groups.items()]
        self.zero_biases = list(dict.fromkeys(key for key, _, _ in self.groups))

    def first_match(self, wanted: dict[frozenset, torch.Tensor | None]) -> int | None:
        """The first candidate (in the question's order) close to the output wanted for its bias
        set, as :func:`~attnprep.grader.tensors.matches` compares (NaN never matches); None."""
        found = []
        for zero_bias, indices, stacked in self.groups:
            want = wanted.get(zero_bias)
            if want is None or tuple(want.shape) != tuple(stacked.shape[1:]):
                continue
            close = torch.isclose(stacked, want.detach().double().expand_as(stacked), rtol=RTOL, atol=ATOL)
            hits = close.flatten(1).all(1).nonzero().flatten().tolist()
            if hits:
                found.append(indices[hits[0]])
        return min(found) if found else None


@dataclass(frozen=True, kw_only=True)
class ModuleGrading(Grading):
    """``[grading]`` of every kind whose attempt is an ``nn.Module`` mapped to the contract's roles."""

    defaults: dict[str, str] = field(default_factory=dict)  # sizes a config leaves to the constructor's default
    kv_heads: str = ""  # the KV head count, an expression of the config ("" : num_kv_heads, else num_heads)


@dataclass(frozen=True, kw_only=True)
class AttentionGrading(ModuleGrading):
    edits: dict[str, list[dict]] = field(default_factory=dict)  # knob -> its {old, new} edits of the solution
    fill: str = ""  # the reference's mask fill as written (float("-inf")): each variant is tried with -1e9 too
    fill_sites: dict[str, list[str]] = field(default_factory=dict)  # mask -> words of its masked_fill's mask, in fill order


class AttentionModule(Kind):
    Grading = AttentionGrading
    Config = ModuleConfig  # the constructor's arguments
    traits = frozenset({"attention", "rows"})
    probes = frozenset({"causality", "padding", "batch", "eval", "gradients", "device", "softmax_rows"})
    pair_knobs = True  # two knobs at once: both edits made together
    mask_fills = True  # its variants take variants.MaskFills (a fill per mask: [grading] fill_sites)
    forward_key = "contract.forward_signature"  # the text when forward takes too few positional arguments
    forward_positional = 3  # … fewer than this: x, attention_mask, is_causal
    leaf_names = False  # nested layers (attn.q_proj) are matched by shape, not by their last name

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        self.object = exercise.contract.objects[0]
        self.arg_names = arg_names(exercise.contract.constructor)
        self.arg_defaults = arg_defaults(exercise.contract.constructor)
        self._role_weights: dict[tuple, dict] = {}  # see role_weights
        self._chosen: dict[tuple[int, str], int] = {}  # (config, the candidates described) -> the mapping chosen
        grading = self.grading  # (a kind built on this one may read no edits: it has its own variants)
        edits = {k: list(v) for k, v in getattr(grading, "edits", {}).items()}
        self.edited = MaskFilledReference(exercise.solution_path, edits, getattr(grading, "fill", ""),
                                          getattr(grading, "fill_sites", {}))
        self._variants: dict[tuple, torch.nn.Module] = {}  # (knobs, fill, config, zero bias) -> its module

    # --- shared -------------------------------------------------------------------------------

    def cases(self, ci: int) -> list[Case]:
        d_model = self.configs[ci]["d_model"]
        return [self._case(s) for s in sequence_cases({"x": (d_model,)}, self.seed, ci)]

    def _case(self, s: SequenceCase) -> Case:
        inputs = {"x": s.tensors["x"], "attention_mask": s.mask, "is_causal": s.is_causal}
        return to_case(s, inputs, lambda positions: {"out": rows(positions, 1, 3)})

    def args(self, ci: int) -> list:
        """The constructor's positional arguments up to the last one the config gives; one it
        skips (``d_context`` left to its default) is passed as the contract's default."""
        config = self.configs[ci]
        given = [i for i, n in enumerate(self.arg_names) if n in config]
        last = max(given, default=-1)
        return [config[n] if n in config else self.arg_defaults.get(n) for n in self.arg_names[: last + 1]]

    def sizes(self, ci: int) -> dict[str, Any]:
        """The config with the sizes it leaves to a default filled in (``[grading] defaults``:
        ``d_context = "d_model"``), for the parameter shapes and the variants."""
        config = dict(self.configs[ci])
        for name, expression in self.grading.defaults.items():
            if config.get(name) is None:
                config[name] = exercises.evaluate(expression, config)
        return config

    def roles(self, ci: int) -> list[W.Role]:
        return W.roles_for(self.exercise, self.sizes(ci))

    def role_weights(self, ci: int, zero_bias=frozenset()) -> dict:
        """The seeded weights of config ``ci`` per role (``zero_bias``: roles whose bias is zero),
        made once per config and shared: each caller gets its own dicts of the same tensors, which
        every use reads (a module's load copies them)."""
        key = (ci, frozenset(zero_bias))
        made = self._role_weights
        if key not in made:
            weights = W.role_tensors(self.roles(ci), self.seed, ci)
            for role in zero_bias:
                weights[role]["bias"] = torch.zeros_like(weights[role]["bias"])
            made[key] = weights
        return {role: dict(tensors) for role, tensors in made[key].items()}

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        B, T = case.queries.shape
        return {"out": (B, T, self.configs[ci]["d_model"])}

    def axis_names(self, ci: int, case: Case) -> dict[str, int]:
        """Sizes by the names shapes are written with in messages: ``(B, H, T, D)``."""
        c = self.configs[ci]
        B, T = case.queries.shape
        axes = {"B": B, "T": T, "C": c["d_model"], "H": c["num_heads"]}
        if "qk_nope_head_dim" in c:  # the latent form's sizes
            axes.update(nope=c["qk_nope_head_dim"], rope=c["qk_rope_head_dim"], v=c["v_head_dim"],
                        kv_lora_rank=c["kv_lora_rank"], q_lora_rank=c["q_lora_rank"])
            axes["nope+rope"] = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
        else:
            axes["D"] = c["d_model"] // c["num_heads"]
            G = exercises.evaluate(self.grading.kv_heads, c) if self.grading.kv_heads \
                else c.get("num_kv_heads", c["num_heads"])
            if G != c["num_heads"]:
                axes["G"] = G
        return axes

    @staticmethod
    def call(module, case: Case):
        i = case.inputs  # the child compares them before and after: a change in place is named
        return module(i["x"], i["attention_mask"], i["is_causal"])

    # --- child --------------------------------------------------------------------------------

    def build(self, namespace: dict, ci: int, channel) -> Built:
        cls = namespace.get(self.object)
        if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)):
            found = [n for n, v in namespace.items() if inspect.isclass(v) and issubclass(v, torch.nn.Module)
                     and v.__module__ == namespace.get("__name__")]
            if found:
                raise ContractError("contract.no_class_found", name=self.object, found=", ".join(found))
            raise ContractError("contract.no_class", name=self.object)
        self.check_forward(cls)
        args = self.args(ci)
        try:
            module = cls(*args)
        except TypeError as exc:
            if "dropout" in self.arg_names and len(args) == len(self.arg_names) and "argument" in str(exc):
                module = cls(*args[:-1])  # dropout is optional in the contract's eyes
            else:
                raise
        if not isinstance(module, torch.nn.Module):
            raise ContractError("contract.not_a_module", name=self.object)
        module.eval()
        self.constructed(module)
        if any(torch.nn.parameter.is_lazy(t) for t in (*module.parameters(), *module.buffers())):
            with torch.no_grad():  # nn.LazyLinear learns its in-features at its first call: made by one
                self.call(module, self.cases(ci)[0])
        roles = self.roles(ci)
        # weight_norm's g and v: one plain weight, the grader's; a 3-d kernel read as a contract matrix
        matrices = Counter(r.weight for r in roles if len(r.weight) == 2)
        W.settle(module, frozenset(matrices), frozenset(Counter(r.pattern for r in roles if r.pattern).values()),
                 frozenset(shape for shape, n in matrices.items() if n > 1), frozenset(self.head_counts(ci)))
        W.upcast(module)  # graded in float32: a bfloat16 parameter would round the grader's weights
        observe.built(module)  # its empty dicts: memos the device watch may empty
        layers, stray = W.layers_of(module)
        options, why = W.candidates(roles, layers, self.head_counts(ci), self.leaf_names)
        if not options:
            raise ContractError(why.key, **why.params, roles=roles_text(self.exercise))
        weights = W.role_tensors(roles, self.seed, ci)
        chosen = options[0]
        if len(options) > 1:
            # the grading process may have chosen among these very candidates already (this is the
            # divergence finder's child building what the grading child built): ask that first
            described = [_described(m) for m in options]
            choice = channel.ask({"question": "mapping_known", "config": ci, "options": described}).get("choice")
            if not (isinstance(choice, int) and 0 <= choice < len(options)):
                probe = self.cases(ci)[0]
                outputs = []
                for mapping in options:
                    W.load(module, mapping, weights)
                    try:
                        with torch.no_grad():
                            outputs.append(encode_tensor(first(self.call(module, probe))))
                    except Exception:
                        outputs.append(None)
                choice = channel.ask({"question": "mapping", "config": ci, "fused": bool(options[0].rows), "options": described,
                                      "zero_bias": [sorted(m.zero_bias) for m in options], "outputs": outputs}).get("choice")
            if isinstance(choice, int) and 0 <= choice < len(options):
                chosen = options[choice]
        # a vector that is a bias only by its place (after its matrix in a ParameterList) and that
        # another role takes (a norm's gain after the matrix it normalises) is no extra bias
        mapped = {n for role in chosen.layers for n in chosen.layer_names(role)}
        extra = [(r, name) for r in roles if r.bias is None for name in chosen.layer_names(r.name)
                 if W.layer_named(layers, name).bias is not None and W.params_of(module, name)[2][-1] not in mapped]
        if extra:
            r, name = extra[0]
            p = next(p for p in self.exercise.contract.params if p.name in (r.name, r.pattern))  # experts.*.w1 for experts.0.w1
            raise ContractError("contract.extra_bias", layer=name, role=r.name, expected=p.describe())
        W.load(module, chosen, weights)
        taken = W.bare_params(module, chosen)
        notes = list(chosen.notes) + [MappingNote("stray", "", p) for p in stray if p not in taken]
        if not chosen.by_name:
            aliased = {n.role for n in chosen.notes if n.kind == "alias"}
            notes = [MappingNote("by_shape", role, layer) for role, layer in chosen.layers.items()
                     if role != layer and role not in chosen.rows and role not in aliased] + notes
        return Built(module, dict(chosen.layers), chosen.by_name, notes, sorted(chosen.zero_bias), sorted(chosen.transposed),
                     dict(chosen.rows))

    def constructed(self, module) -> None:
        """Called with the attempt's module as its constructor left it, before any weight is
        loaded (a kind that grades the attempt's own initialisation looks here); nothing by default."""

    def head_counts(self, ci: int) -> tuple[int, ...]:
        """The config's head counts (its arguments named ``…heads``) and the KV head count: how
        many per-head layers a role may be spread over, or interleaved in a stacked layer."""
        config = self.sizes(ci)
        counts = {v for k, v in config.items() if "heads" in k and isinstance(v, int)}
        if self.grading.kv_heads:
            counts.add(exercises.evaluate(self.grading.kv_heads, config))
        return tuple(sorted(counts))

    def run(self, attempt, case: Case) -> dict[str, Any]:
        return {"out": first(self.call(attempt, case))}

    def grad_leaves(self, attempt, case: Case, built: Built):
        """The parameters, named by their contract role where mapped (``q_proj.weight``)."""
        attempt.zero_grad(set_to_none=True)
        rows = built.rows
        role_of = {layer: role for role, layer in built.mapping.items() if role not in built.transposed and role not in rows}
        params = dict(attempt.named_parameters())
        fused, covered = W.rows_leaves(attempt, rows, set(built.transposed))  # stacked / per-head layers
        bare = {}  # the mapped layers' parameters: wq -> q_proj.weight, bq -> q_proj.bias (F.linear(x, self.wq, self.bq))
        for layer, role in role_of.items():  # a module's own, or a parametrization's original weight
            for name, leaf in zip(W.params_of(attempt, layer)[2], (f"{role}.weight", f"{role}.bias")):
                if leaf.endswith(".bias") and name in role_of:
                    continue  # a bias by its place only, that another role takes (a norm's gain)
                shared = W.bias_rows(attempt, layer) if leaf.endswith(".bias") else None
                if shared is not None:  # a slice of one vector (in_proj_bias): its rows of that vector's gradient
                    fused[leaf] = W.RowsGrad([(params[shared[0]], shared[1])], False)
                    covered = covered | {shared[0]}
                    continue
                bare[name] = leaf
        leaves: dict = dict(fused)
        for name, p in params.items():
            if name in covered:
                continue
            layer, _, leaf = name.rpartition(".")
            if name not in bare and layer not in role_of and not p.requires_grad:
                continue  # a frozen parameter no role takes (a constant): no gradient is expected there
            leaves[bare[name] if name in bare else f"{role_of[layer]}.{leaf}" if layer in role_of else name] = p
        return case, leaves

    def reference_grads(self, ci: int, zero_bias, case: Case):
        """The reference's outputs on ``case`` with gradients on, and its parameters' gradients
        after the same backward (the graded outputs summed) as the child's."""
        module = self._reference_module(ci, zero_bias)
        outputs = {"out": first(self.call(module, case))}
        total = sum((o.nan_to_num() * case.mask(n, tuple(o.shape)).to(o.dtype)).sum() for n, o in outputs.items())
        total.backward()
        grads = {n: p.grad for n, p in module.named_parameters() if p.grad is not None
                 and not (n.endswith(".bias") and n.rsplit(".", 1)[0] in zero_bias)}
        return outputs, grads

    def device_tensors(self, attempt, case: Case) -> list[torch.Tensor]:
        owned = [t for t in case.inputs.values() if isinstance(t, torch.Tensor)]
        return owned + list(attempt.parameters()) + list(attempt.buffers())

    # --- parent -------------------------------------------------------------------------------

    def solution(self):
        """The reference's class."""
        return super().solution()[self.object]

    def _reference_module(self, ci: int, zero_bias=frozenset(), cls=None):
        """``cls`` (the reference's class by default) built for config ``ci``, with the seeded weights."""
        return W.load_roles((cls or self.solution())(*self.args(ci)).eval(), self.role_weights(ci, zero_bias))

    def reference(self, ci: int, zero_bias=frozenset()):
        module = self._reference_module(ci, zero_bias)
        return lambda case: {"out": first(self.call(module, case))}

    def check_forward(self, cls) -> None:
        """Raise :class:`ContractError` (:attr:`forward_key`) when ``cls.forward`` takes fewer than
        :attr:`forward_positional` positional arguments besides self (a ``*args`` takes any number)."""
        _check_forward(cls, self.forward_key, self.forward_positional)

    def probe_output(self, ci: int, zero_bias: frozenset, probe: Case) -> torch.Tensor:
        """The reference's output on the mapping probe (what :meth:`call` returns first)."""
        return self.reference(ci, zero_bias)(probe)["out"]

    def answer(self, question: dict) -> dict:
        """Which candidate mapping's probe output equals the reference's (the first one); asked
        ``mapping_known``, the choice already made among the same candidates (None when none was)."""
        ci = int(question["config"])
        key = (ci, json.dumps(question.get("options"), sort_keys=True))
        if question["question"] == "mapping_known":
            return {"choice": self._chosen.get(key)}
        choice = self._choice(ci, question)
        if question.get("options") is not None:
            self._chosen[key] = choice
        return {"choice": choice}

    def _choice(self, ci: int, question: dict) -> int:
        probe = self.cases(ci)[0]
        candidates = _Candidates(question)
        wanted: dict[frozenset, torch.Tensor] = {}
        for key in candidates.zero_biases:
            with torch.no_grad():
                wanted[key] = self.probe_output(ci, key, probe)
        found = candidates.first_match(wanted)
        if found is not None:
            return found
        if len(question["outputs"]) > 1:  # (a square bare matrix read in either orientation, a stacked layout)
            return self._mistaken_layout(ci, probe, candidates)
        return 0

    def _mistaken_layout(self, ci: int, probe: Case, candidates: _Candidates) -> int:
        """None of the stacked / per-head layouts computes the reference: the first one under
        which the attempt computes a named mistake (its rows read as the mistake's variant would
        need), so that the mistake is named; else the first layout."""
        for knob in self.knobs():
            for fill in variants.FILLS:
                wanted: dict[frozenset, torch.Tensor | None] = {}
                for zero_bias in candidates.zero_biases:
                    try:
                        with torch.no_grad():
                            wanted[zero_bias] = self.variant(ci, zero_bias, knob, fill)(probe)["out"]
                    except Exception:  # a variant that does not run on the probe names nothing
                        wanted[zero_bias] = None
                found = candidates.first_match(wanted)
                if found is not None:
                    return found
        return 0

    def variant(self, ci: int, zero_bias, knob, fill):
        """The reference with the mistake ``knob`` (or the knobs of a tuple, made together), its
        masks filled with ``fill`` (one fill, or a variants.MaskFills: a fill per mask); compiled and
        built when first called (two knobs whose edits clash raise there, which names nothing)."""
        knobs = knobs_of(knob)
        return lambda case: {"out": first(self.call(self._edited_module(ci, zero_bias, knobs, fill), case))}

    def _edited_module(self, ci: int, zero_bias, knobs: tuple[str, ...], fill) -> torch.nn.Module:
        """The module of the reference with the edits of ``knobs`` and ``fill`` (a number, or a
        variants.MaskFills where the reference declares its fill sites), built for config ``ci``:
        compiled and built once per knob set, fill, config and zero biases."""
        per_mask = isinstance(fill, variants.MaskFills) and bool(self.edited.sites)
        fill = fill if per_mask else float(fill)
        fills = (fill.order, *(getattr(fill, site) for site in self.edited.sites)) if per_mask else fill_text(fill)
        key = (knobs, fills, ci, frozenset(zero_bias))
        if key not in self._variants:
            if per_mask:
                namespace = self.edited.mask_filled(knobs, fill)
            else:
                namespace = self.edited.namespace(knobs, fill)
            self._variants[key] = self._variant_module(ci, zero_bias, namespace[self.object])
        return self._variants[key]

    def _variant_module(self, ci: int, zero_bias, cls) -> torch.nn.Module:
        """``cls``, a variant of the reference's class, built for config ``ci`` with the seeded weights.
        A variant whose edits leave ``__init__`` as it is shares the weights of one reference module
        (built once per config and bias set): building and loading a module for each of the
        hundreds of variants a diagnosis tries would cost more than running them."""
        reference = self.solution()
        if _code(cls.__init__) != _code(reference.__init__):
            return self._reference_module(ci, zero_bias, cls)
        key = ((), "shared", ci, frozenset(zero_bias))
        if key not in self._variants:
            self._variants[key] = self._reference_module(ci, zero_bias)
        module = cls.__new__(cls)
        module.__dict__ = dict(self._variants[key].__dict__)  # the same layers and parameters, its own forward
        return module

    def allowed(self, case: Case, sample: int) -> torch.Tensor:
        T = case.queries.shape[1]
        allowed = torch.ones(T, T, dtype=torch.bool)
        if case.inputs["is_causal"]:
            allowed = torch.tril(allowed)
        mask = case.inputs["attention_mask"]
        if mask is not None:
            allowed = allowed & mask[sample][None, :]
        return allowed


def _code(function) -> tuple:
    """What ``function`` does, as compiled: the same for the same text at the same lines, whatever
    its file's name or the compiler flags it was compiled under."""
    c = function.__code__
    return c.co_code, c.co_consts, c.co_names, c.co_varnames, c.co_firstlineno, c.co_linetable


def _check_forward(cls, key: str = "contract.forward_signature", least: int = 3) -> None:
    """Raise :class:`ContractError` (``key``) when ``cls.forward`` takes fewer than ``least``
    positional arguments besides self (a ``*args`` takes any number)."""
    try:
        sig = inspect.signature(cls.forward)
    except (TypeError, ValueError):
        return
    params = list(sig.parameters.values())[1:]  # drop self
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < least:
        raise ContractError(key, names=", ".join(p.name for p in params))


KIND = AttentionModule
