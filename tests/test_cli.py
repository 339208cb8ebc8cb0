"""The companion's one command line (python -m dpstack.companion COMMAND): dispatch and errors."""

import subprocess
import sys

import pytest

from dpstack.companion import cli


def test_every_command_is_listed_in_the_usage_and_an_unknown_one_is_refused(capsys):
    assert cli.main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'frobnicate'" in err
    for name in ("run", "reproduce", "list", "check", "replay", "pages", "summaries", "audit-tables", "demo"):
        assert f"  {name} " in err, name
    assert cli.main([]) == 2


def test_list_names_the_registered_results(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "pst_fig1_epsilon" in out and "mpl_kdd" in out


def test_replay_needs_a_number_of_cells(capsys):
    assert cli.main(["replay"]) == 2
    assert "replay N" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: --replay must be an int
        cli.main(["replay", "many"])


def test_pages_prints_the_notebooks_of_a_result(capsys):
    assert cli.main(["pages", "pst_fig1_epsilon"]) == 0
    assert capsys.readouterr().out.split() == ["notebooks/pst_fig1_epsilon.ipynb"]


def test_the_module_runs_as_a_command():
    done = subprocess.run(
        [sys.executable, "-m", "dpstack.companion", "--help"], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0 and "commands:" in done.stdout
