"""The documentation's shell examples, read from the pages (README.md and docs/): what
tests/docs/test_examples.py runs on the bundled files and tests/live/test_reports.py on the test pool.

A ```console block (``console-live`` for one that needs a live pool) holds commands, lines beginning
`$ ` (a trailing backslash continues one), each followed by what it prints. A ```toml block whose
first line is `# NAME` (`# policy.toml`) is a file the page's examples name: the live test writes it
as the page shows it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
FILE_NAME = re.compile(r"# ([\w.-]+\.toml)\n")


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # of the command, in the page
    command: str
    shown: str  # what the page says it prints

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def examples(kind: str = "console") -> list[Example]:
    """Every example in a ```kind block of the pages, in page order."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for fence in FENCE.finditer(text):
            if fence.group(1) != kind:
                continue
            first = text.count("\n", 0, fence.start(2)) + 1
            found += split(page, first, fence.group(2))
    return found


def split(page: Path, first: int, block: str) -> list[Example]:
    """The examples of one block's text, which starts at line ``first`` of ``page``."""
    out: list[Example] = []
    lines = block.splitlines()
    index = 0
    while index < len(lines):
        if not lines[index].startswith("$ "):
            raise AssertionError(f"{page.relative_to(ROOT)}:{first + index}: output before any `$ ` command")
        line = first + index
        command = lines[index][2:]
        while command.endswith("\\"):
            index += 1
            command = command[:-1] + lines[index].strip()
        index += 1
        shown = []
        while index < len(lines) and not lines[index].startswith("$ "):
            shown.append(lines[index])
            index += 1
        out.append(Example(page, line, command, "\n".join(shown)))
    return out


def files(page: Path) -> dict[str, str]:
    """The files ``page`` shows (```toml blocks that begin `# NAME`): name -> text, as shown."""
    text = page.read_text(encoding="utf-8")
    return {named.group(1): fence.group(2) for fence in FENCE.finditer(text)
            if fence.group(1) == "toml" and (named := FILE_NAME.match(fence.group(2)))}


def plain(text: str) -> str:
    """``text`` without trailing spaces at line ends (Markdown editors strip them) or trailing blank
    lines."""
    return "\n".join(line.rstrip() for line in text.rstrip("\n").splitlines())
