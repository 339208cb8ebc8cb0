"""The papermill runner: re-running leaves the file byte-identical; injected parameters are hidden."""
import importlib.util
import json
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
run_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_notebooks)


def _notebook(path, source):
    cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
             nbformat.v4.new_code_cell(source)]
    nb = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, path)


def test_rerun_is_byte_identical_and_has_no_timestamps(tmp_path):
    path = tmp_path / "nb.ipynb"
    _notebook(path, "print(x * 2)")
    run_notebooks.run(path, {}, "python3")
    first = path.read_bytes()
    run_notebooks.run(path, {}, "python3")
    assert path.read_bytes() == first
    nb = json.loads(first)
    assert "papermill" not in nb["metadata"]
    assert all("papermill" not in c["metadata"] and "execution" not in c["metadata"] for c in nb["cells"])
    assert "".join(nb["cells"][1]["outputs"][0]["text"]) == "2\n"


def test_injected_parameters_are_tagged_remove_cell(tmp_path):
    path = tmp_path / "nb.ipynb"
    _notebook(path, "print(x * 2)")
    run_notebooks.run(path, {"x": 21}, "python3")
    nb = json.loads(path.read_bytes())
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and "remove-cell" in injected[0]["metadata"]["tags"]
    assert "".join(nb["cells"][-1]["outputs"][0]["text"]) == "42\n"


def test_failing_notebook_fails_the_run(tmp_path, capsys):
    path = tmp_path / "bad.ipynb"
    _notebook(path, "1 / 0")
    assert run_notebooks.main([str(path), "-j", "1"]) == 1
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_toc_lists_existing_notebooks():
    found = run_notebooks.notebooks_in_toc()
    assert found and all(p.suffix == ".ipynb" and p.exists() for p in found)
    assert ROOT / "notebooks" / "plr.ipynb" in found


def test_parse_value():
    assert run_notebooks.parse_value("[0.1, 1.0]") == [0.1, 1.0]
    assert run_notebooks.parse_value("paper") == "paper"
    with pytest.raises(SystemExit):
        run_notebooks.main(["-p", "only-name"])


def test_consecutive_stream_chunks_are_merged():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1); print(2)")])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n"),
                           nbformat.v4.new_output("stream", name="stdout", text="2\n"),
                           nbformat.v4.new_output("stream", name="stderr", text="w\n"),
                           nbformat.v4.new_output("stream", name="stdout", text="3\n")]
    outputs = run_notebooks.strip_volatile(nb).cells[0].outputs
    assert [(o["name"], o["text"]) for o in outputs] == [("stdout", "1\n2\n"), ("stderr", "w\n"), ("stdout", "3\n")]
