"""A grade must not depend on what the process graded before it (issue 28): the global generator's
state, the allocator's free memory, the hash seed, the order of grades, a loaded machine."""

from __future__ import annotations

import torch

from attnprep import exercises
from attnprep.grader import engine
from attnprep.grader.kinds import kind_for


def _values(steps) -> list:
    return [(s.line, s.func, tuple(s.shape), None if s.values is None else s.values.tolist()) for s in steps]


def test_reference_trail_does_not_depend_on_the_global_generator():
    """LoRA's reference builds an ``nn.Linear`` inside ``merged()``: its Kaiming init draws from the
    global generator, whose state is whatever the grading process drew before (a variant's init, an
    earlier grade). The trail keeps the same values from any state, and leaves the state as it was."""
    exercise = exercises.get("lora")
    kind = kind_for(exercise, 0)
    case = kind.cases(0)[0]
    trails, states = [], []
    for seed in (1, 2):
        torch.manual_seed(seed)
        torch.rand(seed * 7)  # a different history
        before = torch.random.get_rng_state()
        steps, _, _ = engine.trace_reference(exercise, kind, 0, frozenset(), case)
        trails.append(_values(steps))
        states.append(torch.equal(before, torch.random.get_rng_state()))
    assert any(f.endswith("uniform_") for _, f, _, _ in trails[0])  # the init is traced: the test tests it
    assert trails[0] == trails[1]
    assert states == [True, True]


CAUSAL_HELPER = '''\
# attnprep: causal
import time

import torch

SLEPT = []


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def masked_softmax(scores, keep):
    """softmax over the last axis, the entries where keep is False left out."""
    if not SLEPT and not INSIDE:  # the first call made from anywhere but causal_attention: descheduled
        SLEPT.append(1)
        time.sleep(PAUSE)
    return scores.masked_fill(~keep, float("-inf")).softmax(dim=-1)


INSIDE = []


def causal_attention(q, k, v, attention_mask=None):
    INSIDE.append(1)
    T, D = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) * D ** -0.5
    keep = causal_mask(T, q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    probs = masked_softmax(scores, ~keep)
    INSIDE.pop()
    return probs @ v
'''


def test_a_second_opinion_does_not_depend_on_the_wall_clock(tmp_path):
    """The second opinion's child runs the attempt's helper on substituted arguments for a bounded
    time. On a loaded machine the child loses wall time it does not spend (modelled here by one
    sleep in its first run, as long as the runs' budget): the runs it makes, and so the line said,
    are the same as on a quiet machine."""
    from attnprep.grader import grade, substitute

    lines = []
    for pause in (0.0, substitute.RUN_SECONDS * 1.2):
        path = tmp_path / f"attempt_{len(lines)}.py"
        path.write_text(CAUSAL_HELPER.replace("PAUSE", repr(pause)), encoding="utf-8")
        d = grade(path).divergence
        assert d is not None
        lines.append((d.line, d.reason))
    assert lines[0][1] == "given", lines  # the quiet machine's: the call gave the helper the wrong thing
    assert lines[1] == lines[0]


def test_a_refinement_starved_by_the_machine_says_no_line_rather_than_another(tmp_path, monkeypatch):
    """A refinement of the line (here the second opinion's child) cut short by a loaded machine
    (runnable, short of its CPU time, at its wall clock's limit) would leave the finder's first
    line, another line than a quiet machine says: the grade says none. A slow machine is forced by
    reading every child as runnable with no CPU used, and the second opinion's time made tiny."""
    from attnprep.grader import grade, sandbox, substitute

    path = tmp_path / "attempt.py"
    path.write_text(CAUSAL_HELPER.replace("PAUSE", "0.0"), encoding="utf-8")
    quiet = grade(path).divergence
    assert quiet is not None and quiet.reason == "given"

    real = sandbox._stat_fields

    def starved(pid):
        fields = real(pid)
        if fields is None or len(fields) < 13:
            return fields
        return [b"R", *fields[1:11], b"0", b"0", *fields[13:]]

    monkeypatch.setattr(sandbox, "_stat_fields", starved)
    monkeypatch.setattr(substitute, "CHILD_SECONDS", 0.01)
    # the second opinion's child really short of its time too: on a loaded machine the grading process,
    # not the child, may be the one held back, and a child with no pause finished before its deadline
    # was read (a fresh clone's suite run said 31 'given' here)
    slow = tmp_path / "attempt_slow.py"
    slow.write_text(CAUSAL_HELPER.replace("PAUSE", "2.0"), encoding="utf-8")
    result = grade(slow)
    assert not result.passed and result.verdict == grade(path).verdict
    assert result.divergence is None, result.divergence


def test_corpus_results_sample_spreads_over_every_exercise_and_is_the_same_each_time():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import corpus_results

    sample = corpus_results.corpus_files(sample=44, sample_seed=3)
    exercises_in = {f.relative_to(corpus_results.CORPUS).parts[0] for f in sample}
    every = {f.relative_to(corpus_results.CORPUS).parts[0] for f in corpus_results.corpus_files()}
    assert len(sample) == 44 and exercises_in == every and len(every) >= 22
    assert sample == corpus_results.corpus_files(sample=44, sample_seed=3)
    assert sample != corpus_results.corpus_files(sample=44, sample_seed=4)


def test_a_grade_after_others_is_the_grade_of_a_fresh_process():
    """The round-8 LoRA attempt whose line once depended on what its test worker graded before:
    graded in a process of its own (forked before any grade), and here after its neighbours
    (outputs kept, as the test suite grades), twice, every field of the Result alike."""
    import sys
    from pathlib import Path

    from attnprep.grader import outputs

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import corpus_results

    root = str(corpus_results.CORPUS.parent.parent)
    lora = corpus_results.CORPUS / "lora"
    target = lora / "eqx_partition_merge_a_t_b_t.py"
    fresh = corpus_results._grade_fresh(target, root, 30.0)
    assert fresh[0] == "Result", fresh
    assert dict(fresh[1])["divergence"] is not None
    kept = outputs.keeping()
    outputs.keep()
    try:
        for before in ("lora_merge_transposed.py", "lora_alpha_ignored.py", "peft_merge_transposed.py"):
            if (lora / before).exists():
                corpus_results._grade(lora / before, root, 30.0)
        after = [corpus_results._grade(target, root, 30.0) for _ in range(2)]
    finally:
        outputs.keep(kept)
    assert after == [fresh, fresh]
