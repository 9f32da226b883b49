"""One command line (issue 32): ``memnet COMMAND`` is the console script that
``pip install -e .`` (scripts/setup) installs, ``python -m memnet`` runs the same
``main``, and every operator command is one of its commands."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import memnet.__main__
from memnet.cli import main

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = (
    "serve",
    "hash-key",
    "reindex",
    "create-search-index",
    "replay",
    "sweep",
    "compact",
    "forget",
    "hold",
    "migrate",
    "import",
    "export",
    "verify-export",
)


def usage(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What ``memnet ARGV --help`` prints."""
    with pytest.raises(SystemExit) as exit:
        main([*argv, "--help"])
    assert exit.value.code == 0
    return capsys.readouterr().out


def test_the_console_script_and_python_m_memnet_run_one_main():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"memnet": "memnet.cli:main"}
    assert memnet.__main__.main is main


def test_every_command_is_a_command_of_memnet(capsys):
    listed = re.findall(r"^    (\S+)", usage(capsys), re.MULTILINE)
    assert listed == list(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_its_own_help(capsys, command: str):
    assert usage(capsys, command).startswith(f"usage: memnet {command}")


def test_a_command_it_does_not_know_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["no-such-command"])
    assert exit.value.code == 2 and "invalid choice" in capsys.readouterr().err
