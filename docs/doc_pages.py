"""The pages whose quoted output, inline numbers and commands are kept true, and the markers in them.

README.md and every docs/*.md (a new page is covered by being there). The reports under docs/validation/ are written
whole by `specadvisor validate`, and docs/datasheet-fit.md by benchmarks/datasheet_fit/: the glob takes that one
too, harmlessly (it has no markers and no commands). Imports nothing of the project: tests/readme_commands.py reads
it from any venv.

    <!-- output: specadvisor ARGS -->                    the fenced block right after it is "$ specadvisor ARGS" and
                                                         everything the command prints
    <!-- output, first paragraph: specadvisor ARGS -->   ... up to the output's first blank line, then "..."
    <!--=NAME-->1.48x<!--=-->                            an inline number, computed by doc_values.VALUES[NAME]
    <!-- record: WHAT, HOW -->                           the paragraph after it records a measurement (RECORD)
    ```bash ... ```                                      commands tests/readme_commands.py runs in CI
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^<!-- output(?P<first>, first paragraph)?: specadvisor (?P<args>.+?) -->\n```[^\n]*\n.*?^```$",
                   re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"<!--=(?P<name>[\w.]+)-->(?P<value>.*?)<!--=-->", re.DOTALL)
FENCE = re.compile(r"^```bash\n(.*?)^```$", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"^```.*?^```$", re.MULTILINE | re.DOTALL)  # any fenced block, quoted output included
# A paragraph (or table, or list) whose figures record a measurement the repository cannot recompute (another
# machine's run, a timing, a paper) starts with this line, saying what and how; every other figure is generated.
RECORD = "<!-- record: "
# Pages a program writes whole: no markers, no records; that program is their source.
WRITTEN_WHOLE = {"docs/datasheet-fit.md": "benchmarks/datasheet_fit/", "docs/scale.md": "benchmarks/scale_rows.py"}


def pages() -> list[Path]:
    """README.md first, then docs/*.md by name: the order commands run in, so a page's commands may use the files
    an earlier page's commands wrote."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def name(page: Path) -> str:
    return str(page.relative_to(ROOT))
