"""notebooks/walkthrough.ipynb runs top to bottom, in this interpreter's environment, and is committed clean."""

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "walkthrough.ipynb"
KERNEL = "specadvisor-test"


@pytest.fixture
def kernel_of_this_python(tmp_path, monkeypatch):
    """A kernel spec whose argv is this very interpreter (the venv's), found first through JUPYTER_PATH, so a
    fresh venv in CI needs no `ipykernel install` and never picks up some other python3 kernel."""
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "specadvisor test (this venv)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # connection files stay in the tmp dir
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))  # no profile written to the user's home
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return KERNEL


def test_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "the walkthrough has code cells"
    assert all(not c.outputs and c.execution_count is None for c in code)


def test_notebook_runs_top_to_bottom(kernel_of_this_python, tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name=kernel_of_this_python, timeout=300,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.data]
    assert len(images) == 5  # alpha, batch, lengths, memory, and the review's overview
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    for expected in ("verdict: enable", "PASS  predictability", "break-even alpha", "max concurrency", "rag on"):
        assert expected in text
