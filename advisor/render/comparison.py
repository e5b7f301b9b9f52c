"""`recommend --method compare`'s table and decision, above the picked method's own report (text or Markdown)."""

from __future__ import annotations

from advisor.advice.comparison import Comparison, MethodRow, label
from advisor.advice.recommendation import Recommendation
from advisor.render.wrap import paragraph, terminal_width

COLUMNS = ("method", "k", "verdict", "e2e speedup (80%)", "memory GB", "concurrency", "fits")


def _cells(row: MethodRow) -> list[str]:
    if row.verdict == "refused":
        return [label(row), "-", "refused", "-", "-", "-", "no"]
    e2e = "does not fit" if row.e2e is None else f"{row.e2e.point:.2f}x ({row.e2e.low:.2f}-{row.e2e.high:.2f})"
    return [label(row), str(row.k), row.verdict, e2e, f"{row.memory_gb:.2f}", str(row.concurrency),
            "yes" if row.fits else "no"]


def _pick(c: Comparison) -> str:
    """The pick, saying exactly which rows its interval was compared with: those that gain (enable or marginal);
    rows that gain at no k, do not fit or are refused are never picked and were not compared."""
    gaining = [r for r in c.rows if r.e2e is not None and r.verdict in ("enable", "marginal")]
    picked = next(r for r in gaining if label(r) == c.picked)
    others = [label(r) for r in gaining if r is not picked]
    left = [label(r) for r in c.rows if r not in gaining]
    said = (f"pick: {c.picked}: its 80% interval ({picked.e2e.low:.2f}-{picked.e2e.high:.2f}x) lies above those "
            f"of the other methods that gain here ({', '.join(others)})" if others else
            f"pick: {c.picked}: the only method that gains here")
    if len(left) == 1:
        said += f"; {left[0]} gains at no k, does not fit or is refused, so it was not compared (it is never picked)"
    elif left:
        said += (f"; {', '.join(left)} gain at no k, do not fit or are refused, so they were not compared (they are "
                 "never picked)")
    return said


def decision(c: Comparison) -> list[str]:
    """The decision in words, then why each refused method was."""
    if c.decision == "pick":
        lines = [_pick(c)]
    elif c.decision == "tie":
        lines = [f"tie: {', '.join(c.tied)}: their 80% intervals overlap, so the table cannot rank them (the report "
                 f"below is for the best point, {c.picked}); to separate them: {c.separate}"]
    else:
        lines = ["off: no method gains at any k here; leave speculation off"]
    lines.append(f"concurrency: full-length requests the KV cache holds with each ({c.baseline_concurrency} without "
                 "speculation); memory: what each takes from the plain engine's KV cache, per GPU")
    return lines + [f"refused: {label(r)}: {r.note}" for r in c.rows if r.verdict == "refused"]


def comparison_text(r: Recommendation, width: int | None = None) -> str:
    """The table and the decision, then a header for the report that follows; "" without a comparison."""
    c = r.comparison
    if c is None:
        return ""
    width = width or terminal_width()
    rows = [_cells(row) for row in c.rows]
    widths = [max(len(col), *(len(cells[i]) for cells in rows)) for i, col in enumerate(COLUMNS)]
    line = lambda cells: "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)  # noqa: E731
                                   for i, (cell, w) in enumerate(zip(cells, widths)))
    out = ["every method at its best k:", line(list(COLUMNS)), line(["-" * w for w in widths])]
    out += [line(cells) for cells in rows]
    out += [*(paragraph(text, width, rest="  ") for text in decision(c)), ""]
    out.append(f"--- {c.picked or label(c.rows[0])}: its recommendation ---")
    return "\n".join(out) + "\n"


def comparison_markdown(r: Recommendation) -> str:
    c = r.comparison
    if c is None:
        return ""
    out = ["## Every method at its best k", "", "| " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * 6]
    out += ["| " + " | ".join(_cells(row)) + " |" for row in c.rows]
    out += ["", *(f"- {text}" for text in decision(c)), ""]
    return "\n".join(out) + "\n"
