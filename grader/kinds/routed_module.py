"""Kind ``routed_module``: a :mod:`.plain_module` whose tokens are routed by a router layer (a sparse
mixture of experts): each token goes where the router's logits rank highest.

What differs from ``plain_module``: ``x`` is ``(B, T, d)`` only (routing reads tokens of sequences),
and graded inputs keep routing decisions unambiguous. A token whose router logits have two within
``[grading] margin`` of each other is redrawn, and so is a sequence whose mean logits do (a
per-sequence routing is a named mistake, computed from them), so that an attempt computing the
logits in another order or in bfloat16 picks the reference's experts. Repeated roles
(``experts.*.w1``, one per expert) are the contract's ``repeat`` params, mapped by
:mod:`attnprep.grader.weights`; the report shows them once per pattern.

Exercise data (``[grading]``): as ``plain_module``, and ``router`` (the role whose output ranks
the experts) and ``margin`` (the least gap between two router logits of a graded token).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from attnprep.grader.cases import Case, again, alone, generator, low_precision, x_of
from attnprep.grader.kinds.plain_module import LOW, MAIN, PlainGrading, PlainModule
from attnprep.grader.result import MappingNote
from attnprep.grader.weights import _index_pattern

REDRAWS = 200


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) of eight ulps at 1 of ``dtype``: the router's softmax and the weighted sum of
    experts round once more than one feed-forward does."""
    eps = torch.finfo(dtype).eps
    return 8 * eps, 8 * eps


@dataclass(frozen=True, kw_only=True)
class RoutedGrading(PlainGrading):
    router: str  # the role whose output ranks the experts
    margin: float = 0.05  # the least gap between two router logits of a graded token


class RoutedModule(PlainModule):
    Grading = RoutedGrading

    def _make_cases(self, ci: int) -> list[Case]:
        d = self.configs[ci][self.input]
        g = generator(self.seed, ci, "routed module cases")
        router = self.role_weights(ci)[self.grading.router]["weight"]  # (E, d)
        margin = float(self.grading.margin)

        def clear(logits: torch.Tensor, gap: float) -> torch.Tensor:
            """Whether the logits (..., E) rank with every gap at least ``gap``: (...) bool."""
            ranked = logits.sort(dim=-1, descending=True).values
            return (ranked[..., :-1] - ranked[..., 1:] >= gap).all(-1)

        def draw(B: int, T: int, scale: float = 1.0) -> torch.Tensor:
            x = scale * torch.randn(B, T, d, generator=g)
            for attempt in range(REDRAWS):
                redo = ~clear(x @ router.T, margin)  # (B, T) tokens with a near-tie
                seq = ~clear((x @ router.T).mean(1), margin / 10)  # (B,) sequences whose mean logits have one
                if not redo.any() and not seq.any():
                    return x
                redo[:, attempt % T] |= seq  # a sequence's near-tie: one of its tokens redrawn
                x[redo] = scale * torch.randn(int(redo.sum()), d, generator=g)
            raise ValueError(f"no inputs ({B}, {T}, {d}) keep the router's logits {margin} apart")

        def case(name: str, x: torch.Tensor, **more) -> Case:
            B, T = x.shape[:2]
            return Case(name, {"x": x}, torch.ones(B, T, dtype=torch.bool), (T, T), **more)

        main = draw(2, 7)
        low = draw(2, 7).to(LOW[1])
        return [
            case(MAIN, main, observe=True, grads=True),
            case(x_of("(3, 5, d) * 4", "large_activations"), draw(3, 5, 4.0)),
            case(x_of("(1, 1, d)"), draw(1, 1)),
            case(x_of("(1, 12, d)"), draw(1, 12)),
            case(low_precision("bfloat16", "(2, 7, d)"), low, dtype=LOW[0], tolerance=tolerance(LOW[1])),
            # the probes: a sample alone, a second call
            case(alone(None, 2), main[1:2].clone(), base=MAIN, base_rows=(1, 2), check="batch"),
            case(again(MAIN), main.clone(), base=MAIN, check="eval"),
        ]

    def build(self, namespace: dict, ci: int, channel):
        """The attempt built and mapped as ``plain_module`` does; what the report reads (the mapping
        and its notes) told once per repeated role, the mapping by index kept for the gradients."""
        built = super().build(namespace, ci, channel)
        built.by_index = dict(built.mapping)
        built.mapping = mapping_per_pattern(built.mapping)
        built.notes = once_per_pattern(built.notes)
        return built

    def grad_leaves(self, attempt, case: Case, built):
        return super().grad_leaves(attempt, case, dataclasses.replace(built, mapping=built.by_index))


def mapping_per_pattern(mapping: dict[str, str]) -> dict[str, str]:
    """role -> layer with a repeated role's indices told once when every index went to the same
    pattern of layers, index to index: ``experts.*.w1 -> experts.*.fc1``."""
    out: dict[str, str] = {}
    patterns: dict[str, set] = {}
    for role, layer in mapping.items():
        pattern, index = _index_pattern(role)
        layer_pattern, layer_index = _index_pattern(layer)
        patterns.setdefault(pattern, set()).add((layer_pattern, layer_index == index) if len(index) == 1 else None)
    for role, layer in mapping.items():
        pattern, index = _index_pattern(role)
        told = patterns[pattern]
        if len(index) == 1 and len(told) == 1 and next(iter(told)) is not None and next(iter(told))[1]:
            out[pattern] = next(iter(told))[0]
        else:
            out[role] = layer
    return out


def once_per_pattern(notes: list[MappingNote]) -> list[MappingNote]:
    """The mapping notes with those of a repeated role told once: ``experts.0.w1 ← experts.0.fc1``,
    ``experts.1.w1 ← experts.1.fc1`` … as ``experts.*.w1 ← experts.*.fc1``."""
    out, seen = [], set()
    for note in notes:
        role, index = _index_pattern(note.role)
        layer, layer_index = _index_pattern(note.layer)
        if len(index) == 1 and layer_index == index:
            note = MappingNote(note.kind, role, layer)
        if (note.kind, note.role, note.layer) not in seen:
            seen.add((note.kind, note.role, note.layer))
            out.append(note)
    return out


KIND = RoutedModule
