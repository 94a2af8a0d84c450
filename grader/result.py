"""Results are values: frozen dataclasses the Rich report and the JSON only read.

This module is torch-free so that the history and the renderer can use it without torch.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field

JSON_VERSION = 1


class Verdict(str, enum.Enum):
    PASSED = "passed"
    WRONG_OUTPUT = "wrong output"
    WRONG_SHAPE = "wrong shape"
    MASK_LEAK = "mask leak"
    ERROR = "error"
    TIMEOUT = "timeout"
    BUILTIN = "used a built-in"
    CONTRACT = "contract"
    SYNTAX = "syntax error"


@dataclass(frozen=True)
class Check:
    """One named row of the report: ``output``, ``causality``, ``padding`` …"""

    name: str
    passed: bool | None  # None: not applicable / could not run (says why in detail)
    detail: str = ""


@dataclass(frozen=True)
class Diagnosis:
    id: str  # a mistake id of exercises/mistakes.toml
    title: str
    why: str
    fix: str
    evidence: str = ""  # what the grader saw: "outputs match the variant …", "softmax(dim=2) observed"


@dataclass(frozen=True)
class ShapeRow:
    stage: str  # "q", "scores", "attn", "out" …
    expected: str
    got: str  # "" when not observed
    equivalent: bool = False  # another layout of the same numbers, e.g. (B*H, T, T) for (B, H, T, T)

    @property
    def ok(self) -> bool:
        return not self.got or self.got == self.expected or self.equivalent


@dataclass(frozen=True)
class Heatmap:
    """Attention probabilities of one (sample, head), rows = queries, columns = keys."""

    title: str
    expected: list[list[float]]
    got: list[list[float]] | None
    allowed: list[list[bool]]  # False where the reference masks the cell
    graded: list[bool] | None = None  # per query row: False at a padded query (not graded); None: all


@dataclass(frozen=True)
class ErrorInfo:
    kind: str  # "exception", "syntax", "exit", "crash", "memory", "timeout", "reply", "internal"
    message: str  # one line
    traceback: str = ""  # the user's own frames only


@dataclass(frozen=True)
class Result:
    exercise: str
    file: str
    verdict: Verdict
    checks: tuple[Check, ...] = ()
    diagnoses: tuple[Diagnosis, ...] = ()
    mapping: dict[str, str] = field(default_factory=dict)
    mapping_notes: tuple[str, ...] = ()  # "took layer 'wq' for q_proj (by shape)", "no bias on …"
    shapes: tuple[ShapeRow, ...] = ()
    heatmap: Heatmap | None = None
    row_sums: tuple[float, float] | None = None  # (min, max) of observed softmax row sums
    output_diff: str = ""  # torch.testing-style summary of the first mismatch
    error: ErrorInfo | None = None
    internal: bool = False  # True: attnprep itself failed, not the attempt
    duration_s: float = 0.0
    stdout: str = ""  # what the attempt printed (stdout and stderr), bounded; not in the JSON yet

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED

    def to_json(self) -> dict:
        data = {
            "exercise": self.exercise,
            "file": self.file,
            "passed": self.passed,
            "verdict": self.verdict.value,
            "checks": [asdict(c) for c in self.checks],
            "diagnoses": [asdict(d) for d in self.diagnoses],
            "mapping": dict(self.mapping),
            "duration_s": round(self.duration_s, 3),
        }
        if self.error is not None:
            data["error"] = asdict(self.error)
        if self.internal:
            data["internal"] = True
        return data


def results_to_json(results: list[Result]) -> dict:
    return {"version": JSON_VERSION, "results": [r.to_json() for r in results]}
