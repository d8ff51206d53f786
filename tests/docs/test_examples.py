"""The documentation's examples, run: every ```console block of the README and of docs/ shows `osep`
commands (lines beginning `$ `, a trailing backslash continuing one) each followed by what it prints,
stdout and stderr as a terminal shows them; the test runs each command from the checkout, on the
bundled files, and compares.

Nothing is normalised but trailing spaces at line ends (Markdown editors strip them): an example whose
output moves with the machine, the date or a temporary path does not belong in a ```console block.
Examples that need a live HTCondor pool are ```console-live blocks: the same form, not run here
(tests/live/test_reports.py runs them on the test pool). The blocks are read by tests/docexamples.py.

Also checked: no page names an issue ("issue 12", "#12"), a session, a time of day or the machine's
load, outside code; and the README stays short (it points into docs/ for the rest).

`python tests/docs/test_examples.py --rewrite` writes what the commands print now into the blocks, for
a change that moves an example's output on purpose (review the diff)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from docexamples import FENCE, PAGES, ROOT, examples, plain, split

README_LINES = 150


def run(command: str) -> str:
    """What `command` (an `osep ...` line) prints, stdout and stderr in the order written, run from
    the checkout with the Python running the tests, and a cache directory of its own (removed after:
    osep tune keeps its journal there), as a new user's would be."""
    words = shlex.split(command)
    assert words[0] == "osep", f"a console example runs osep only: {command}"
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run([sys.executable, "-m", "osep", *words[1:]], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300, check=False,
                              env={**os.environ, "XDG_CACHE_HOME": cache})
    return done.stdout


CONSOLE = examples()


def test_there_are_examples_to_run():
    assert len(CONSOLE) >= 8


@pytest.mark.parametrize("example", CONSOLE, ids=lambda e: e.id)
def test_example_prints_what_it_shows(example):
    assert plain(run(example.command)) == plain(example.shown), f"{example.id}: $ {example.command}"


def test_live_examples_are_osep_commands():
    for example in examples("console-live"):
        assert example.command.startswith(("osep ", "sudo ")), example.id


def test_every_shown_command_is_in_a_checked_block():
    """A `$ osep` line outside a console or console-live block would be an example nobody checks."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for fence in FENCE.finditer(text):
            if fence.group(1) not in ("console", "console-live"):
                assert not re.search(r"^\$ ", fence.group(2), re.MULTILINE), (
                    f"{page.relative_to(ROOT)}: a `$ ` command in a ```{fence.group(1)} block")


# What a page must not say outside code: an issue's number, a session, a time of day, the machine's load.
DIARY = [
    (re.compile(r"\bissues? #?\d+|(?<![\w&/])#\d+\b", re.IGNORECASE), "an issue"),
    (re.compile(r"\b(?:this|that|last|previous|next|one|a|each|the) (?:work |coding )?session\b|\bsession \d",
                re.IGNORECASE), "a session"),
    (re.compile(r"\b[012]?\d:[0-5]\d\b"), "a time of day"),
    (re.compile(r"\bload (?:of )?(?:about )?\d", re.IGNORECASE), "the machine's load"),
]


def prose(text: str) -> str:
    """The text outside fenced blocks and inline code."""
    text = FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_diary_in_the_pages(page):
    text = prose(page.read_text(encoding="utf-8"))
    for pattern, what in DIARY:
        found = pattern.search(text)
        assert found is None, f"{page.relative_to(ROOT)} names {what}: {found.group(0)!r}"


@pytest.mark.parametrize("sample", ["see issue 12", "fixed in #12", "this session", "in the last session",
                                    "at 13:04", "(load 1)", "load of 2.5"])
def test_the_diary_check_finds(sample):
    assert any(pattern.search(prose(sample)) for pattern, _ in DIARY)


@pytest.mark.parametrize("sample", ["`13:04`", "```\n13:04\n```\n", "a load balancer", "PV 89.10 M",
                                    "sessions, disc space", "[a link](x.md#pv)"])
def test_the_diary_check_passes(sample):
    assert not any(pattern.search(prose(sample)) for pattern, _ in DIARY)


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= README_LINES


def rewrite() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")

        def block(fence: re.Match[str], page: Path = page, text: str = text) -> str:
            if fence.group(1) != "console":
                return fence.group(0)
            first = text.count("\n", 0, fence.start(2)) + 1
            body = "".join(f"$ {e.command}\n{run(e.command).rstrip()}\n" for e in split(page, first, fence.group(2)))
            return fence.group(0)[: fence.start(2) - fence.start(0)] + body + "```"

        new = FENCE.sub(block, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--rewrite"]:
        sys.exit("usage: python tests/docs/test_examples.py --rewrite")
    rewrite()
