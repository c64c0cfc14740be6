"""A griffe extension for the API reference: the docstrings of block-env are written in
reStructuredText's plain-text habits (``literal``, ``::`` before an indented code block,
simple tables ruled with ``=====``), and mkdocstrings renders them as Markdown. Double
backticks already read as code in Markdown; this turns the other two into their Markdown
forms before rendering, and drops RST's escaped spaces (``\\ ``). mkdocs.yml loads it as
``extensions: [docs/hooks/rst_docstrings.py]`` of the mkdocstrings python handler."""

from __future__ import annotations

import re
import textwrap
from typing import Any

import griffe

BORDER = re.compile(r"^(\s*)=+(\s+=+)+\s*$")


def _columns(border: str) -> list[int]:
    """Start offsets of the columns a simple table's border line marks."""
    return [m.start() for m in re.finditer(r"=+", border)]


def _cells(line: str, starts: list[int]) -> list[str]:
    ends = starts[1:] + [max(len(line), starts[-1]) + 1]
    return [line[a:b].strip() for a, b in zip(starts, ends)]


def _join(old: str, new: str) -> str:
    """A cell's text continued on the next line (a word split at a hyphen stays joined)."""
    if old.endswith("-") and new:
        return old + new
    return f"{old} {new}".strip()


def _table(lines: list[str]) -> list[str]:
    """A simple table (its lines, borders included) as Markdown table lines."""
    starts = _columns(lines[0])
    borders = [i for i, line in enumerate(lines) if BORDER.match(line)]
    header_end = borders[1] if len(borders) >= 3 else None
    rows: list[list[str]] = []
    header: list[str] | None = None
    for i, line in enumerate(lines):
        if i in borders:
            if i == header_end and rows:
                header, rows = [" ".join(c.split()) for c in rows[0]], []
            continue
        if not line.strip():
            continue
        cells = _cells(line, starts)
        if rows and not cells[0]:  # a continuation line: the first column is blank
            rows[-1] = [_join(old, new) for old, new in zip(rows[-1], cells)]
        else:
            rows.append(cells)
    width = len(starts)
    if header is None:  # Markdown tables need a header: the first row serves
        if not rows:
            return lines
        header, rows = rows[0], rows[1:]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * width]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def rst_to_markdown(text: str) -> str:
    """Simple tables become Markdown tables and ``::`` literal blocks fenced code."""
    lines = text.replace("\\ ", "").splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if BORDER.match(line):
            end = _table_end(lines, i)
            if end is not None:
                out += ([""] if out and out[-1].strip() else []) + _table(lines[i : end + 1])
                out.append("")
                i = end + 1
                continue
        if line.rstrip().endswith("::"):
            stripped = line.rstrip()[:-2].rstrip()
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            block_start = j
            indent = len(line) - len(line.lstrip())
            while j < len(lines) and (
                not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent
            ):
                j += 1
            block = lines[block_start:j]
            while block and not block[-1].strip():
                block.pop()
            if block:
                if stripped:
                    out.append(stripped + ":")
                out += ["", "```", *textwrap.dedent("\n".join(block)).splitlines(), "```", ""]
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _table_end(lines: list[str], start: int) -> int | None:
    """Index of the closing border of the simple table whose top border is ``lines[start]``:
    the second border, or the third when rows follow the second at once (a header rule)."""
    borders = [j for j in range(start + 1, len(lines)) if BORDER.match(lines[j])]
    if not borders:
        return None
    second = borders[0]
    follows = second + 1 < len(lines) and lines[second + 1].strip()
    if follows and len(borders) >= 2:
        return borders[1]
    return second


class RstDocstrings(griffe.Extension):
    """Rewrites every docstring griffe loads (modules, classes, functions, attributes)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)
