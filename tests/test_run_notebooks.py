"""The papermill runner: re-running leaves the file byte-identical; injected parameters are hidden."""

import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
run_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_notebooks)


def _notebook(path, source):
    cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}), nbformat.v4.new_code_cell(source)]
    nb = nbformat.v4.new_notebook(
        cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
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
    nb.cells[0].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="1\n"),
        nbformat.v4.new_output("stream", name="stdout", text="2\n"),
        nbformat.v4.new_output("stream", name="stderr", text="w\n"),
        nbformat.v4.new_output("stream", name="stdout", text="3\n"),
    ]
    outputs = run_notebooks.strip_volatile(nb).cells[0].outputs
    assert [(o["name"], o["text"]) for o in outputs] == [("stdout", "1\n2\n"), ("stderr", "w\n"), ("stdout", "3\n")]


# ----------------------------------------------------------------------------- atomic write, clean output
def _leftover_temps(folder):
    return sorted(p.name for p in Path(folder).iterdir() if p.name.startswith(".") or ".running" in p.name)


def test_an_interrupted_write_leaves_the_committed_notebook_intact(tmp_path, monkeypatch):
    path = tmp_path / "nb.ipynb"
    _notebook(path, "print(x * 2)")
    committed = path.read_bytes()
    real_write = run_notebooks.nbformat.write

    def write_half_then_fail(nb, fp, **kw):  # a full disk, or Ctrl-C in the middle of the write
        real_write(nb, fp, **kw)
        Path(fp).write_bytes(Path(fp).read_bytes()[:100])
        raise OSError("No space left on device")

    monkeypatch.setattr(run_notebooks.nbformat, "write", write_half_then_fail)
    with pytest.raises(OSError):
        run_notebooks.run(path, {}, "python3")
    assert path.read_bytes() == committed
    assert _leftover_temps(tmp_path) == []


def test_a_killed_run_leaves_nothing_nbval_collects_and_the_next_run_cleans_up(tmp_path):
    """A real SIGKILL while the kernel runs: no ``*.ipynb`` beside the page but the page, and the
    next run removes the killed writer's temporary file (and only that)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "nb.ipynb"
    _notebook(path, "import time\ntime.sleep(60)")
    committed = path.read_bytes()
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "run_notebooks.py"), str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not [p for p in tmp_path.iterdir() if p.name.startswith(".nb.ipynb")] and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # the kernel is running now
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    assert path.read_bytes() == committed
    assert [p.name for p in tmp_path.glob("*.ipynb")] + [p.name for p in tmp_path.glob(".*.ipynb")] == ["nb.ipynb"]
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".nb.ipynb")]
    assert left and all(p.suffix == ".tmp" for p in left)  # the killed writer's, not collected by nbval
    unrelated = tmp_path / ".other.ipynb.nohost.1.0123abcd.tmp"
    unrelated.write_text("not this page's")
    _notebook(path, "print(x * 2)")
    run_notebooks.run(path, {}, "python3")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".nb.ipynb")]
    assert unrelated.exists()


def test_a_concurrent_runs_temporary_file_is_left_alone(tmp_path):
    path = tmp_path / "nb.ipynb"
    _notebook(path, "print(x * 2)")
    other = tmp_path / "nb.running.ipynb"  # what another run of the same notebook may be writing
    other.write_text("another run's output")
    run_notebooks.run(path, {}, "python3")
    assert other.read_text() == "another run's output"
    assert "".join(json.loads(path.read_bytes())["cells"][1]["outputs"][0]["text"]) == "2\n"


def test_failing_kernel_keeps_the_notebook_and_the_summary_lists_the_failure(tmp_path, capsys):
    good, bad = tmp_path / "good.ipynb", tmp_path / "bad.ipynb"
    _notebook(good, "print(x * 2)")
    _notebook(bad, "import math\nmath.sqrt(-1)")
    committed = bad.read_bytes()
    assert run_notebooks.main([str(good), str(bad), "-j", "1"]) == 1
    out, err = capsys.readouterr()
    assert re.search(r"ok +\S*good\.ipynb", out) and re.search(r"FAILED +\S*bad\.ipynb", out)
    assert "1 of 2 notebook(s) executed" in out and "1 FAILED" in out
    assert "math domain error" in err and "failed: " in err and "bad.ipynb" in err  # the error stays loud
    assert bad.read_bytes() == committed
    assert _leftover_temps(tmp_path) == []


def test_kernel_chatter_is_dropped_and_real_kernel_output_kept(tmp_path, capfd):
    path = tmp_path / "nb.ipynb"
    # a cell writing straight to the kernel's own stderr (not a notebook output): must be shown
    _notebook(path, "import os\nos.write(2, b'real problem from the kernel process\\n')\nprint(x)")
    assert run_notebooks.main([str(path), "-j", "1"]) == 0
    out, err = capfd.readouterr()
    assert "without encryption" not in out + err and "KeyboardInterrupt" not in out + err
    assert "real problem from the kernel process" in out
    assert "1 of 1 notebook(s) executed" in out


def test_filter_noise_drops_only_the_known_kernel_chatter():
    text = (
        "[IPKernelApp] WARNING | Kernel is running over TCP without encryption. All communication "
        "(including code and outputs) is sent in plain text and is susceptible to eavesdropping.\n"
        "[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel.\n"
        "KeyboardInterrupt caught in kernel\n"
        "Traceback (most recent call last):\n"
        "MemoryError: kernel ran out of memory\n"
    )
    assert (
        run_notebooks.filter_noise(text)
        == "Traceback (most recent call last):\nMemoryError: kernel ran out of memory\n"
    )


# ----------------------------------------------------------------------------- pages generated from a template
def _template(path):
    cells = [
        nbformat.v4.new_markdown_cell("# Page A", metadata={"tags": ["only:dataset=a"]}),
        nbformat.v4.new_markdown_cell("# Page B", metadata={"tags": ["only:dataset=b"]}),
        nbformat.v4.new_code_cell('dataset = "a"   # which page\nn = 2', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "from IPython.display import display, HTML\n"
            "if dataset == 'b':\n"
            "    display(HTML('<b>absent</b>'), metadata={'dpstack': {'data_absent': True}})\n"
            "    get_ipython().input_transformers_post.append(lambda lines: [])\n"
        ),
        nbformat.v4.new_code_cell("print(dataset * n)", metadata={"tags": ["needs-data"]}),
        nbformat.v4.new_markdown_cell("Caption of the result.", metadata={"tags": ["needs-data"]}),
    ]
    nb = nbformat.v4.new_notebook(
        cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
    nbformat.write(nb, path)


def test_generate_selects_cells_and_sets_the_page_defaults(tmp_path):
    _template(tmp_path / "t.ipynb")
    nb = run_notebooks.generate(tmp_path / "t.ipynb", {"dataset": "b"})
    assert [c.source for c in nb.cells if c.cell_type == "markdown"][0] == "# Page B"
    assert not any("Page A" in c.source for c in nb.cells)
    assert nb.cells[1].source == "dataset = 'b'   # which page\nn = 2"
    assert not any(t.startswith("only:") for c in nb.cells for t in c.metadata.get("tags", []))
    with pytest.raises(ValueError, match="does not assign"):
        run_notebooks.generate(tmp_path / "t.ipynb", {"other": 1})


def test_generated_page_with_and_without_data(tmp_path, monkeypatch):
    _template(tmp_path / "t.ipynb")
    monkeypatch.setattr(
        run_notebooks,
        "PAGES",
        {
            str(tmp_path / "a.ipynb"): (str(tmp_path / "t.ipynb"), {"dataset": "a"}),
            str(tmp_path / "b.ipynb"): (str(tmp_path / "t.ipynb"), {"dataset": "b"}),
        },
    )
    for name in ("a", "b"):
        (tmp_path / f"{name}.ipynb").write_text("{}")  # whatever is there is replaced by the generated page
        run_notebooks.run(tmp_path / f"{name}.ipynb", {}, "python3")
    a = nbformat.read(tmp_path / "a.ipynb", as_version=4)
    assert "".join(a.cells[-2].outputs[0]["text"]) == "aa\n" and "data_absent" not in a.metadata.get("dpstack", {})
    b = nbformat.read(tmp_path / "b.ipynb", as_version=4)
    assert b.metadata["dpstack"]["data_absent"] is True
    assert not any("needs-data" in c.metadata.get("tags", []) for c in b.cells)  # no dangling caption
    assert all("nbval-ignore-output" in c.metadata.get("tags", []) for c in b.cells if c.cell_type == "code")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary files left


@pytest.mark.parametrize("page", sorted(run_notebooks.PAGES))
def test_committed_generated_pages_match_their_template(page):
    """A generated page is never edited by hand: its cells are the template's for its parameters."""
    template, params = run_notebooks.PAGES[page]
    expected = run_notebooks.generate(ROOT / template, params)
    committed = nbformat.read(ROOT / page, as_version=4)
    if committed.metadata.get("dpstack", {}).get("data_absent"):
        expected = run_notebooks.mark_absent_data(expected)
    source = [
        (c.cell_type, c.source) for c in committed.cells if "injected-parameters" not in c.metadata.get("tags", [])
    ]
    assert source == [(c.cell_type, c.source) for c in expected.cells], (
        f"{page} differs from {template}: regenerate it with python scripts/run_notebooks.py {page}"
    )


def test_sidebar_marks_pages_without_data(tmp_path):
    spec = importlib.util.spec_from_file_location("absent_data", ROOT / "book" / "_ext" / "absent_data.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    (tmp_path / "notebooks").mkdir()
    for name, meta in (
        ("x", {"dpstack": {"data_absent": True}}),
        ("y", {}),
        ("z", {"dpstack": {"data_absent": False}}),
    ):
        nbformat.write(nbformat.v4.new_notebook(metadata=meta), tmp_path / "notebooks" / f"{name}.ipynb")
    assert ext.absent_pages(tmp_path) == ["x"]
    css = ext.sidebar_css(["x"])
    assert 'a[href$="x.html"]::after' in css and "data absent" in css
    assert ext.sidebar_css([]) == ""


# ------------------------------------------------------------------- what a page was executed from
def test_an_in_place_run_records_its_inputs_and_a_run_with_parameters_does_not(tmp_path):
    path = tmp_path / "nb.ipynb"
    _notebook(path, "print(x * 2)")
    run_notebooks.run(path, {}, "python3")
    recorded = run_notebooks.recorded_inputs(path)
    assert sorted(recorded) == ["book", "code", "data", "libraries", "results", "source"]
    assert run_notebooks.changed_inputs(path) == []
    out = tmp_path / "live.ipynb"
    run_notebooks.run(path, {"x": 3}, "python3", output=out)
    assert run_notebooks.recorded_inputs(out) == {}


def test_an_edited_cell_makes_the_page_stale_but_its_outputs_and_metadata_do_not(tmp_path):
    path = tmp_path / "nb.ipynb"
    _notebook(path, "print(x * 2)")
    run_notebooks.run(path, {}, "python3")
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].outputs = []
    nb.cells[1].metadata["collapsed"] = True
    nbformat.write(nb, path)
    assert run_notebooks.changed_inputs(path) == []
    nb.cells[1].source = "print(x * 3)"
    nbformat.write(nb, path)
    assert run_notebooks.changed_inputs(path) == ["source"]
    nb.cells[1].source = "print(x * 2)"
    nb.cells[1].metadata["tags"] = ["remove-input"]  # a tag changes the rendered page
    nbformat.write(nb, path)
    assert run_notebooks.changed_inputs(path) == ["source"]


def test_a_changed_module_result_or_library_names_its_component(tmp_path, monkeypatch):
    path = tmp_path / "nb.ipynb"
    _notebook(path, "print(x * 2)")
    run_notebooks.run(path, {}, "python3")
    real_digests = run_notebooks._file_digests

    def edited(folder, patterns=("*",)):
        out = real_digests(folder, patterns)
        if Path(folder) == ROOT / "results":
            out["pst_fig1_epsilon/paper.csv"] = "0" * 64
        return out

    monkeypatch.setattr(run_notebooks, "_file_digests", edited)
    run_notebooks._shared_inputs.cache_clear()
    assert run_notebooks.changed_inputs(path) == ["results"]
    monkeypatch.setattr(run_notebooks, "_file_digests", real_digests)
    real_hash = __import__("dpstack.provenance", fromlist=["code_hash"]).code_hash
    monkeypatch.setattr(
        "dpstack.provenance.code_hash", lambda p: "edited" if Path(p).name == "base.py" else real_hash(p)
    )
    run_notebooks._shared_inputs.cache_clear()
    assert run_notebooks.changed_inputs(path) == ["code"]
    monkeypatch.setattr("dpstack.provenance.code_hash", real_hash)
    monkeypatch.setattr(run_notebooks, "LIBRARIES", (*run_notebooks.LIBRARIES, "nbformat"))
    run_notebooks._shared_inputs.cache_clear()
    assert run_notebooks.changed_inputs(path) == ["libraries"]
    run_notebooks._shared_inputs.cache_clear()


def test_changed_executes_only_stale_notebooks_and_stale_lists_them(tmp_path, capsys):
    fresh, stale = tmp_path / "fresh.ipynb", tmp_path / "stale.ipynb"
    _notebook(fresh, "print(x * 2)")
    _notebook(stale, "print(x * 3)")
    run_notebooks.run(fresh, {}, "python3")
    run_notebooks.run(stale, {}, "python3")
    nb = nbformat.read(stale, as_version=4)
    nb.cells[1].source = "print(x * 4)"
    nbformat.write(nb, stale)
    before = fresh.read_bytes()
    assert run_notebooks.main([str(fresh), str(stale), "--stale"]) == 1
    out = capsys.readouterr().out
    assert "stale.ipynb: source changed" in out and "fresh.ipynb" not in out.split("up to date")[0]
    assert run_notebooks.main([str(fresh), str(stale), "--changed", "-j", "1"]) == 0
    executed = [line for line in capsys.readouterr().out.splitlines() if " ok " in line]
    assert len(executed) == 1 and "stale.ipynb" in executed[0]
    assert fresh.read_bytes() == before
    assert "".join(nbformat.read(stale, as_version=4).cells[1].outputs[0]["text"]) == "4\n"
    assert run_notebooks.main([str(fresh), str(stale), "--stale"]) == 0
    assert run_notebooks.main([str(fresh), "--changed", "-p", "x", "2"]) == 2


#: The inputs that do not depend on the machine (the data home and the library versions do).
COMMITTED_INPUTS = ("source", "code", "results", "book")


def test_every_committed_notebook_was_executed_from_the_committed_code_results_and_cells():
    """So that ``make book`` on a clone of main only builds the HTML (and no page shows what older code printed)."""
    stale = {}
    for path in run_notebooks.notebooks_in_toc():
        changed = run_notebooks.changed_inputs(path, COMMITTED_INPUTS)
        if changed:
            stale[path.name] = changed
    assert not stale, (
        f"executed from other inputs than the committed ones: {stale}; "
        "re-execute them: python scripts/run_notebooks.py --changed"
    )
