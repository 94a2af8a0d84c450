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
    """$ATTNPREP_HOME under a file: `list` still lists (without history), `hint` still hints (without
    remembering it, tests/test_terminal.py), commands that need the folder stop with one line and
    exit 2, never an 'internal error'."""
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    env = {"ATTNPREP_HOME": str(tmp_path / "a-file" / "home")}
    listed = run_main(["list"], tmp_path, env)
    assert listed.returncode == 0 and "Multi-head attention" in listed.stdout
    assert listed.stderr.count("\n") == 1 and "cannot use the data folder" in listed.stderr
    for args in (["hint", "mha", "--reset"], ["stats"]):
        proc = run_main(args, tmp_path, env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("error: ") and "cannot use the data folder" in proc.stderr
        assert proc.stderr.count("\n") == 1
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


# --- what Typer gives: help, version, completion -------------------------------------------------


def test_bare_attnprep_prints_the_help_and_exits_0(tmp_path):
    proc = run_main([], tmp_path, {"ATTNPREP_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr
    assert "Usage: attnprep [OPTIONS] COMMAND" in proc.stdout and "│ list " in proc.stdout
    assert proc.stderr == "" and not proc.stdout.endswith("\n\n\n")


def test_version():
    from attnprep import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"attnprep {__version__}\n"


@pytest.mark.parametrize("args", [["-h"], ["list", "-h"], ["compare", "-h"]], ids=" ".join)
def test_dash_h_is_help(args):
    result = runner.invoke(app, args, env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert f"Usage: attnprep {' '.join(args[:-1])}".rstrip() in result.stdout
    assert "-h" in result.stdout and "--help" in result.stdout


def test_completion_options_are_listed_and_the_shell_gets_completions(tmp_path):
    listed = runner.invoke(app, ["--help"], env={"COLUMNS": "100", "NO_COLOR": "1"}).stdout
    assert "--install-completion" in listed and "--show-completion" in listed and "--version" in listed
    env = {"ATTNPREP_HOME": str(tmp_path / "home"), "_ATTNPREP_COMPLETE": "complete_bash"}
    proc = run_main([], tmp_path, {**env, "COMP_WORDS": "attnprep li", "COMP_CWORD": "1"})
    assert proc.returncode == 0 and proc.stdout.split() == ["list"], proc.stderr
    proc = run_main([], tmp_path, {**env, "COMP_WORDS": "attnprep compare --head", "COMP_CWORD": "2"})
    assert proc.stdout.split() == ["--head-dim"] or proc.stdout.split() == ["--heads", "--head-dim"], proc.stdout


def test_show_completion_prints_the_script_for_the_shell(tmp_path):
    """The script is Typer's (its completion function calls back with $_ATTNPREP_COMPLETE)."""
    code = "import sys; from attnprep.cli import main; sys.argv[0] = 'attnprep'; main()"
    proc = subprocess.run(["bash", "-c", f'{sys.executable} -c "{code}" --show-completion; echo "exit $?"'],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ATTNPREP_HOME": str(tmp_path / "home")})
    assert proc.stdout.rstrip().endswith("exit 0"), proc.stdout + proc.stderr
    assert "_attnprep_completion()" in proc.stdout and "_ATTNPREP_COMPLETE=complete_bash" in proc.stdout


def test_the_completion_code_is_loaded_only_when_asked_for(tmp_path):
    """`list` builds the completion options but registers no completion class (Typer's own options
    would: typer.completion.completion_init at start-up)."""
    script = ("import sys; sys.argv = ['attnprep', 'list']\n"
              "from typer._click import shell_completion\n"
              "before = set(shell_completion._available_shells)\n"
              "from attnprep.cli import main\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n"
              "print('ADDED', sorted(set(shell_completion._available_shells) - before))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ATTNPREP_HOME": str(tmp_path / "home")})
    assert proc.stdout.splitlines()[-1] == "ADDED []", proc.stdout + proc.stderr
