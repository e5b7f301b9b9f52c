"""The pages (README.md and docs/*.md, docs/doc_pages.py) cannot drift from the program: every output block and
marked number in them is what docs/regenerate.py computes now (run it after a change that moves them), every output
block is marked, every other figure is marked as a record, and every link points at a file and heading that exist.
The commands themselves are run by tests/readme_commands.py in CI, from a fresh `pip install .`."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


regenerate = _load(ROOT / "docs/regenerate.py")
doc_pages = _load(ROOT / "docs/doc_pages.py")
readme_commands = _load(ROOT / "tests/readme_commands.py")
PAGES = doc_pages.pages()
ALL = {doc_pages.name(page): page.read_text() for page in PAGES}
page_names = pytest.mark.parametrize("page", sorted(ALL))


def test_the_pages_are_the_readme_and_the_docs():
    assert list(ALL)[0] == "README.md"
    assert {"docs/model.md", "docs/validation.md", "docs/json.md", "docs/calibration.md",
            "docs/acceptance.md"} <= set(ALL)


@page_names
def test_each_page_quotes_what_the_program_prints(page):
    diff = regenerate.differences(ALL[page], page)
    assert not diff, f"{page} is out of date: run `python docs/regenerate.py`\n{diff}"


@page_names
def test_every_quoted_command_output_is_generated(page):
    blocks = re.findall(r"(?:^(<!-- output[^\n]*-->)\n)?```[^\n]*\n\$ (specadvisor [^\n]*)", ALL[page], re.MULTILINE)
    assert [command for marker, command in blocks if not marker] == []
    assert all(f": {command} -->" in marker for marker, command in blocks)


# A figure: a number with a unit (%, a speedup, a time, a size, a rate). "4x H100" names a deployment, not a figure.
FIGURE = re.compile(r"(?<![\w.])[~−+-]?\d[\d,.]*(?:[-–]\d[\d,.]*)?"
                    r"(?:%|x\b(?! [A-Z])| ?(?:ms|µs|s|min|minutes|GB|GFLOP/s|M/s)\b)")


def _prose_paragraphs(text: str) -> list[str]:
    """The paragraphs of a page without its code, quoted output, generated numbers and inline code."""
    text = doc_pages.CODE.sub("\n", text)
    text = doc_pages.INLINE.sub("", text)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.split(r"\n\s*\n", text)


@page_names
def test_every_figure_is_generated_or_a_record(page):
    """A figure in a page's prose is either computed by docs/regenerate.py or sits in a paragraph marked as the
    record of a measurement the repository cannot recompute (docs/doc_pages.RECORD), which says what and how."""
    if page in doc_pages.WRITTEN_WHOLE:
        return
    loose = [(figures, paragraph.strip()[:80]) for paragraph in _prose_paragraphs(ALL[page])
             if (figures := FIGURE.findall(paragraph)) and not paragraph.lstrip().startswith(doc_pages.RECORD)]
    assert not loose, f"{page}: figures neither generated nor marked as a record: {loose}"


def test_the_readme_quotes_the_default_report():
    assert "<!-- output: specadvisor recommend --prompt-len 8000 --out-len 200 -->" in README


def test_every_inline_number_has_a_recipe():
    names = {m["name"] for text in ALL.values() for m in doc_pages.INLINE.finditer(text)}
    assert names and names <= set(regenerate.VALUES)
    assert set(regenerate.VALUES) <= names  # no recipe left behind for a number no page shows


def _anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", doc_pages.CODE.sub("", text), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@page_names
def test_every_link_points_at_a_file_and_heading_that_exist(page):
    folder = (ROOT / page).parent
    broken = []
    for path, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", ALL[page]):
        if "://" in path:
            continue
        target = (folder / path).resolve() if path else ROOT / page
        if not target.exists() or anchor and anchor not in _anchors(target.read_text()):
            broken.append(f"{path}#{anchor}" if anchor else path)
    assert not broken, f"{page} links to files or headings that do not exist: {broken}"


def test_the_readme_fits_a_five_minute_read():
    assert len(README.splitlines()) <= 250, "README.md is over 250 lines: move the detail to a page under docs/"


def test_the_readme_links_the_formulas_the_figures_and_the_schema():
    """One link each from the README: a verification step's formula, the validation figures, the JSON schema."""
    for target in ("docs/model.md#a-verification-step", "docs/validation.md", "docs/json.md",
                   "docs/recommendation.schema.json"):
        assert f"]({target})" in README, target
    assert "\n## A verification step\n" in ALL["docs/model.md"]  # the heading that anchor names


def test_the_ci_script_finds_the_pages_commands():
    commands = readme_commands.page_commands()
    assert any(c.startswith("python3 -m venv .venv && .venv/bin/pip install .") for c in commands)
    assert sum(c.startswith("specadvisor plot ") for c in commands) == 4
    assert any(c.startswith("specadvisor validate --from-json") for c in commands)  # a docs page's command
    assert len(commands) == len(set(commands))  # a command quoted on two pages runs once
    assert not [c for c in commands if c.endswith("\\")]  # continuation lines are joined
    assert readme_commands.variants("specadvisor x [--a 1] [--format json|markdown]") == [
        "specadvisor x", "specadvisor x --a 1 --format json", "specadvisor x --a 1 --format markdown"]


def test_every_stand_in_still_has_its_command_on_a_page():
    commands = readme_commands.page_commands()
    stale = [prefix for prefix in readme_commands.QUICK if not any(c.startswith(prefix) for c in commands)]
    assert not stale, f"QUICK stands in for commands no page has any more: {stale}"
