"""Shared fixtures: every test gets its own user data folder ($ATTNPREP_HOME); ``graded`` grades a
file once per session."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest

# The corpus's slowest attempts (flash's Python loop over query rows) take about 5 s of a quiet
# core; the suite grades them with room for a busy machine. The grader's own 10 s limit is tested
# by the hostile attempts and the timeout tests, which pass theirs.
GRADE_TIMEOUT = 30.0
pytest_plugins = ["pytester"]  # tests/test_pytest_plugin.py runs pytest in-process too
_HOME_NUMBERS = itertools.count()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config) -> None:
    """``-n`` without ``--dist`` schedules with pytest-xdist's ``worksteal``, not its ``load``: a
    worker that runs out of tests takes half of what another still holds. ``load`` hands out fixed
    chunks, and the suite's slow tests (the mutation sample, the hostile attempts, the processes
    some tests start) once kept one worker busy 84 s after the other had stopped (a core idle for
    a sixth of the run). Runs before xdist's own hook, which makes ``load`` of ``no``."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", None) == "no":
        config.option.dist = "worksteal"


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one worker more than the cores this process may run on. A worker spends part of
    its time waiting, not computing: on its grading child's pipe, on the processes the end-to-end
    tests start, on the timeouts the hostile attempts must reach; a third worker on two cores fills
    those waits (quiet, 8274 tests: 7 min 32 s with two workers, 7 min 04 s with three, the CPU
    the same; benchmarks/README.md)."""
    import os

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores + 1


def pytest_configure(config) -> None:
    """One torch thread in the test process, before any test runs an op: the grader forks it, and a
    fork after a multi-threaded op (OpenMP's pool started) can hang the child. The grader sets this
    itself on its first use, but a test computing on its own may run before any grade.
    Not in pytest-xdist's controller (``-n``): it runs no test, and importing torch there kept
    both cores waiting 2-3 s before the workers started."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return
    import torch

    torch.set_num_threads(1)
    # The reference's and the variants' outputs kept across grades (grader/outputs.py): the corpus
    # grades hundreds of attempts of each exercise, whose failing ones search the same variants.
    # Off in attnprep itself; tests/test_outputs_kept.py holds a grade with them to one without.
    from attnprep.grader import outputs

    outputs.keep()


@pytest.fixture(scope="session")
def _homes(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("attnprep-homes")


@pytest.fixture(autouse=True)
def attnprep_home(_homes, monkeypatch) -> Path:
    """A data folder of the test's own, not created yet. (Not under ``tmp_path``: making a
    ``tmp_path`` for each of the thousands of tests that never ask for one took seconds.)"""
    home = _homes / f"home-{next(_HOME_NUMBERS)}"
    monkeypatch.setenv("ATTNPREP_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def _language_back_to_the_environment():
    """A test that sets the language (``texts.set_language``) leaves it set for the process: put it
    back after each test, whichever tests a worker runs after it."""
    yield
    from attnprep import texts

    texts.set_language(None)


def grade_key(path: str | Path, exercise: str | None, seed: int) -> tuple:
    """What a grade depends on: the file (its path, which the result names, and its bytes), the
    exercise id and the seed. Not the language: a result holds text keys, rendered at the edge."""
    path = Path(path).resolve()
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest(), exercise, seed


def _shared_dir(tmp_path_factory) -> Path | None:
    """Under pytest-xdist, a folder every worker of the run shares (the parent of the workers' own
    base temp folders), where a value (a grade) is written once for all of them; ``None`` in a plain run."""
    import os

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    shared = tmp_path_factory.getbasetemp().parent / "attnprep-graded"
    shared.mkdir(exist_ok=True)
    return shared


@pytest.fixture(scope="session")
def once(tmp_path_factory):
    """``once(key, compute)``: ``compute()``, worked out once per test run for ``key`` (a string).
    In a plain run the value is kept in this process; under pytest-xdist the workers share it
    through a folder of pickled values: the first worker to ask computes it (holding a lock on
    its key) and the others read what it wrote. The value is shared: read it, do not change it."""
    import fcntl
    import pickle

    shared = _shared_dir(tmp_path_factory)
    kept: dict[str, object] = {}

    def once_(key: str, compute):
        if key in kept:
            return kept[key]
        if shared is None:
            kept[key] = compute()
            return kept[key]
        name = hashlib.sha256(key.encode()).hexdigest()[:32]
        done = shared / f"{name}.pickle"
        with open(shared / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one worker computes, the others wait for its value
            if done.exists():
                kept[key] = pickle.loads(done.read_bytes())  # our own test run's values, not an attempt's
            else:
                kept[key] = compute()
                partial = done.with_suffix(".partial")
                partial.write_bytes(pickle.dumps(kept[key]))
                partial.replace(done)
        return kept[key]

    return once_


@pytest.fixture(scope="session")
def graded(once):
    """``graded(path, exercise=None, seed=0, divergence=True)``: ``grade(path, exercise, seed=seed,
    divergence=divergence)`` with the default device and the suite's GRADE_TIMEOUT, computed once per
    test run for the same file, exercise, seed and ``divergence`` (the corpus files are graded by
    several test modules; see ``once``). ``divergence=False`` (no line looked for, no trace child:
    the verdict, the checks and the mistakes named are the same) for a test that reads no line. The
    result is shared: read it, do not change it. A test that watches the grading itself
    (monkeypatches the engine, times it, passes another timeout) calls ``grade`` directly. A file
    named without its exercise is the grade of the exercise ``grade`` finds for it: ``graded(p)``
    and ``graded(p, "mha")`` of an mha attempt are one grade."""
    from attnprep.grader import grade

    def graded_once(path: str | Path, exercise: str | None = None, *, seed: int = 0, divergence: bool = True):
        if exercise is not None and not isinstance(exercise, str):
            raise TypeError("graded() takes an exercise id; grade an Exercise object with grade()")
        if exercise is None:  # the id grade() finds (header, then file name): graded(p) is graded(p, that id)
            from attnprep.grader import engine

            source = Path(path).read_bytes()[:2000].decode("utf-8", errors="replace")
            exercise = engine.exercise_of(Path(path), source, None).id
        key = grade_key(path, exercise, seed) + (() if divergence else ("no divergence",))
        return once(repr(key), lambda: grade(path, exercise, seed=seed, timeout=GRADE_TIMEOUT, divergence=divergence))

    return graded_once


@pytest.fixture
def run_pytest_here(pytester, monkeypatch):
    """``run_pytest_here(folder, home, *args, env=None)``: pytest run as tests/test_pytest_plugin.py's
    ``pytest_in`` runs it, in this process (pytest's own ``runpytest_inprocess``: a fresh session, the
    plugin loaded from its entry point, the grading children forked from here), without a new
    interpreter importing pytest and torch again (about 2 s of CPU a run). For what does not depend
    on the process; the tests of what pytest imports into its process, and one whole run, stay in a
    subprocess. Used by tests/test_pytest_plugin.py and tests/test_safe_text.py."""
    import subprocess
    from types import SimpleNamespace

    # pytester takes out of sys.modules what a run (and the test) imported, for inline runs of test
    # files of one name; a run here imports attnprep's and rich's modules, which a later test of this
    # worker would then import again as other objects (another Verdict, another rich Text): kept
    kept = SimpleNamespace(restore=lambda: None)
    monkeypatch.setattr(pytester, "_sys_modules_snapshot", kept)
    monkeypatch.setattr(pytester, "_Pytester__take_sys_modules_snapshot", lambda: kept)

    def run(folder: Path, home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        monkeypatch.chdir(folder)
        for name, value in {"ATTNPREP_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "120", "CI": "true", **(env or {})}.items():
            monkeypatch.setenv(name, value)
        done = pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)
        return subprocess.CompletedProcess(args, int(done.ret), "\n".join(done.outlines) + "\n", "\n".join(done.errlines))

    return run
