"""The top-level app: commands load on first use, the command table matches the modules, the
collector paused for start-up is running again when a command runs, typos get a suggestion."""

from __future__ import annotations

import gc
import importlib
import json
import os
import subprocess
import sys

import pytest
import typer.main
from typer.testing import CliRunner

from attnprep import app as app_module
from attnprep.app import COMMANDS, app

runner = CliRunner()


def test_the_command_table_names_exactly_what_each_module_registers():
    for module in sorted(set(COMMANDS.values())):
        built = typer.main.get_command(importlib.import_module(f"attnprep.commands.{module}").app)
        registered = set(built.commands) if isinstance(built, typer.core.TyperGroup) else {built.name}
        assert registered == {name for name, m in COMMANDS.items() if m == module}, module


def test_help_lists_every_command_in_table_order():
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert result.exit_code == 0
    positions = [result.stdout.find(f"│ {name} ") for name in COMMANDS]
    assert all(p >= 0 for p in positions), result.stdout
    assert positions == sorted(positions)


PROBE = r"""
import gc, json, sys
sys.argv = ["attnprep", *json.loads(sys.argv[1])]
seen = {}
try:
    from attnprep.cli import main
    main()
except SystemExit as exc:
    seen["code"] = exc.code
finally:
    sys.stdout.flush()
    seen["modules"] = sorted(m for m in sys.modules if m.startswith("attnprep.") or m in ("sqlite3", "jinja2", "platformdirs"))
    seen["gc_enabled"] = gc.isenabled()
    sys.stderr.write("\nAPP_PROBE " + json.dumps(seen) + "\n")
"""


def probe(args: list[str], cwd, env_extra: dict | None = None) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1", **(env_extra or {})})
    return json.loads(proc.stderr.rpartition("APP_PROBE ")[2].splitlines()[0])


def test_list_loads_its_own_module_only(tmp_path):
    """In an empty folder with no history: no other command module, no SQLite, no jinja2."""
    home = tmp_path / "home"
    seen = probe(["list"], tmp_path, {"ATTNPREP_HOME": str(home)})
    assert seen["code"] in (0, None)
    commands = [m for m in seen["modules"] if m.startswith("attnprep.commands.")]
    assert commands == ["attnprep.commands.catalog"]
    assert not {"sqlite3", "jinja2", "attnprep.history", "attnprep.hints", "attnprep.grader"} & set(seen["modules"])
    assert not (home / "history.sqlite3").exists()


def test_list_with_attempts_needs_no_jinja2_once_the_stubs_are_cached(tmp_path):
    home = tmp_path / "home"
    env = {"ATTNPREP_HOME": str(home)}
    assert probe(["new", "mha"], tmp_path, env)["code"] in (0, None)
    (tmp_path / "mha.py").write_text("# attnprep: mha\n# started\n", encoding="utf-8")
    first = probe(["list"], tmp_path, env)  # may render the stub (and cache it)
    second = probe(["list"], tmp_path, env)
    assert first["code"] in (0, None) and second["code"] in (0, None)
    assert not {"jinja2", "attnprep.hints", "attnprep.grader"} & set(second["modules"])


def test_list_loads_the_history_once_there_is_one(tmp_path, monkeypatch):
    from attnprep import history

    home = tmp_path / "home"
    monkeypatch.setenv("ATTNPREP_HOME", str(home))
    history.connect().close()
    seen = probe(["list"], tmp_path, {"ATTNPREP_HOME": str(home)})
    assert {"sqlite3", "attnprep.history"} <= set(seen["modules"])


def test_the_collector_is_running_again_when_the_command_runs():
    """attnprep.cli.main pauses the cyclic collector for start-up; the app's callback resumes it."""
    gc.disable()
    try:
        seen = {}
        real = app_module._module_commands("catalog")["list"].callback

        def spy(*args, **kwargs):
            seen["enabled"] = gc.isenabled()
            return real(*args, **kwargs)

        command = app_module._module_commands("catalog")["list"]
        command.callback = spy
        try:
            result = runner.invoke(app, ["list"])
        finally:
            command.callback = real
        assert result.exit_code == 0, result.output
        assert seen == {"enabled": True}
    finally:
        gc.enable()
        gc.unfreeze()


@pytest.mark.parametrize("args", [["--help"], ["lsit"], ["list"]], ids=" ".join)
def test_main_leaves_the_collector_enabled(args, tmp_path):
    seen = probe(args, tmp_path, {"ATTNPREP_HOME": str(tmp_path / "home")})
    assert seen["gc_enabled"] is True


def test_a_mistyped_command_gets_a_suggestion():
    result = runner.invoke(app, ["lsit"], env={"NO_COLOR": "1"})
    assert result.exit_code == 2
    assert "No such command 'lsit'; did you mean 'list'?" in result.output
    result = runner.invoke(app, ["zzz"], env={"NO_COLOR": "1"})
    assert result.exit_code == 2 and "No such command 'zzz'." in result.output


def run_main(args: list[str], cwd, env_extra: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import sys; from attnprep.cli import main; sys.argv[0] = 'attnprep'; main()", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "100", **env_extra})


def test_an_unusable_data_folder_is_one_clear_line(tmp_path):
    """$ATTNPREP_HOME under a file: `list` still lists (without history), commands that need the
    folder stop with one line and exit 2, never an 'internal error'."""
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    env = {"ATTNPREP_HOME": str(tmp_path / "a-file" / "home")}
    listed = run_main(["list"], tmp_path, env)
    assert listed.returncode == 0 and "Multi-head attention" in listed.stdout
    assert listed.stderr.count("\n") == 1 and "cannot use the data folder" in listed.stderr
    for args in (["hint", "mha"], ["stats"]):
        proc = run_main(args, tmp_path, env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("error: cannot use the data folder") and proc.stderr.count("\n") == 1
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
