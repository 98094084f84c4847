"""The fenced code blocks of README.md and docs/*.md, read the way tests/test_docs.py runs them.

The conventions are documented for writers in docs/development.md ("Docs that run"). Kept apart
from the test so other tests can read a documented statement instead of repeating it
(tests/test_extension.py runs the SQL of docs/sql.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

RUNNABLE = {"python", "console", "sh", "sql"}
NEEDS = {"native", "sqlite-vec", "embeddings", "mcp"}
EXPECTED_PREFIX = "-- => "

_FENCE = re.compile(r"^(`{3,})(.*)$")
_NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(.+?)\s*-->$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the first line of code (after the opening fence)
    language: str
    needs: frozenset[str]
    code: str
    not_run: str | None  # the reason given in <!-- not-run: reason -->
    output: str | None  # the ```output block right after a python block

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}:{self.language}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, with ```output blocks attached to the block before them."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        words = fence.group(2).split()
        language = words[0] if words else ""
        needs = frozenset(w.removeprefix("needs=") for w in words[1:] if w.startswith("needs="))
        others = [w for w in words[1:] if not w.startswith("needs=")]
        if others or not needs <= NEEDS:
            raise ValueError(f"{page.name}:{i + 1}: unknown words in the info string {fence.group(2)!r}")
        previous = lines[i - 1].strip() if i > 0 else ""
        reason = _NOT_RUN.match(previous)
        end = i + 1
        while end < len(lines) and lines[end] != fence.group(1):
            end += 1
        if end == len(lines):
            raise ValueError(f"{page.name}:{i + 1}: the code block is never closed")
        code = "\n".join(lines[i + 1 : end]) + "\n"
        if language == "output":
            if not found or found[-1].language != "python" or found[-1].output is not None:
                raise ValueError(f"{page.name}:{i + 1}: an output block must follow a python block")
            last = found.pop()
            found.append(
                Block(last.page, last.line, last.language, last.needs, last.code, last.not_run, code)
            )
        else:
            found.append(Block(page, i + 2, language, needs, code, reason.group(1) if reason else None, None))
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


def console_commands(code: str) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a console block: ``$ `` lines and what follows them."""
    pairs: list[tuple[str, list[str]]] = []
    continuing = False
    for line in code.rstrip("\n").split("\n"):
        if continuing:
            command, output = pairs[-1]
            pairs[-1] = (command + "\n" + line, output)
        elif line.startswith("$ "):
            pairs.append((line[2:], []))
        elif pairs:
            pairs[-1][1].append(line)
        else:
            raise ValueError(f"a console block starts with a command ('$ '), not {line!r}")
        continuing = line.endswith("\\") and not pairs[-1][1]
    return [(command, "\n".join(output)) for command, output in pairs]


def sql_expected(code: str) -> str:
    """What a sql block says the shell prints: its ``-- => `` lines, in order."""
    return "\n".join(
        line.removeprefix(EXPECTED_PREFIX) for line in code.split("\n") if line.startswith(EXPECTED_PREFIX)
    )


def sql_statement(page: str, starts_with: str) -> str:
    """The statement of a sql block in ``page`` (relative to the repository) that starts so."""
    for block in blocks(REPO / page):
        if block.language != "sql":
            continue
        statement: list[str] = []
        for line in block.code.split("\n"):
            if line.startswith(starts_with) or statement:
                statement.append(line)
            if statement and line.rstrip().endswith(";"):
                return "\n".join(statement)
    raise LookupError(f"{page} has no sql block with a statement starting {starts_with!r}")


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is ``expected``, where ``...`` in expected stands for any text.

    Trailing whitespace of lines and trailing blank lines are not compared."""

    def tidy(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")

    pieces = tidy(expected).split("...")
    actual = tidy(actual)
    if len(pieces) == 1:
        return pieces[0] == actual
    if not actual.startswith(pieces[0]) or not actual.endswith(pieces[-1]):
        return False
    position, end = len(pieces[0]), len(actual) - len(pieces[-1])
    for piece in pieces[1:-1]:
        found = actual.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return position <= end
