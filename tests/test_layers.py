"""The structure docs/architecture.md describes: no two modules import each other, even through
others, and no module is much over 450 lines unless the page says why it stays whole. (The packages'
order is import-linter's layers contract in pyproject.toml, which scripts/test runs.)"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
MOST_LINES = 460  # "about 450"
WHOLE = re.compile(r"^\| `(osep/[\w/]+\.py)` \| (\d+) \|", re.M)  # the page's table of whole modules


def circles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan), each sorted: modules that
    import one another, directly or through others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in sorted(imports.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(imports):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize(("imports", "expected"), [
    ({"a": {"b"}, "b": set()}, []),
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"a"}}, []),
])
def test_circles_finds_modules_that_import_each_other(
        imports: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert circles(imports) == expected


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = grimp.build_graph("osep", include_external_packages=False)
    imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert circles(imports) == []


def test_every_module_over_450_lines_says_why_it_stays_whole() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    whole = {path: int(lines) for path, lines in WHOLE.findall(page)}
    for path in sorted((ROOT / "osep").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text().splitlines())
        if lines > MOST_LINES:
            assert name in whole, f"{name} has {lines} lines and docs/architecture.md says nothing of it"
    for name, lines in whole.items():  # the page's counts are today's, within a few lines
        path = ROOT / name
        assert path.exists(), f"docs/architecture.md names {name}, which is gone"
        assert abs(len(path.read_text().splitlines()) - lines) <= 20, f"{name}'s line count in the page is stale"


def named_in_table(page: str) -> set[str]:
    """The modules (and whole folders, ending in /) the page's table of every module names: a cell's
    first path is whole, the names after it are in the same folder."""
    section = page[page.index("## Every module"):]
    named: set[str] = set()
    for row in section.splitlines():
        if not row.startswith("| `osep/"):
            continue
        folder = ""
        for name in re.findall(r"`([\w/.]+)`", row.split(" | ")[0]):
            if name.startswith("osep/"):
                folder = name if name.endswith("/") else name.rsplit("/", 1)[0] + "/"
                named.add(name)
            elif name.endswith(".py"):
                named.add(folder + name)
    return named


def _only_a_docstring(path: Path) -> bool:
    body = ast.parse(path.read_text()).body
    return all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


def test_the_architecture_page_names_every_module() -> None:
    named = named_in_table((ROOT / "docs" / "architecture.md").read_text())
    unnamed = []
    for path in sorted((ROOT / "osep").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if path.name == "__init__.py" and _only_a_docstring(path):
            continue
        folders = {name.rsplit("/", k)[0] + "/" for k in range(1, name.count("/"))}
        if name not in named and not folders & named:
            unnamed.append(name)
    assert unnamed == [], "docs/architecture.md does not say what these are for"
    assert [n for n in named if not (ROOT / n).exists()] == [], "docs/architecture.md names what is gone"


def test_the_stack_drawn_is_the_contract() -> None:
    """The page's drawing of the stack names the layers of pyproject.toml's contract, in its order."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contract if c["type"] == "layers")
    page = (ROOT / "docs" / "architecture.md").read_text()
    drawing = page[page.index("## The packages, in one stack"):].split("```text\n", 1)[1].split("```", 1)[0]
    drawn = []
    for line in drawing.splitlines():
        if line.startswith(" ") and not line.startswith("  "):  # a layer; its words go on further in
            names = re.match(r" ([\w.]+(?: \| [\w.]+)*)", line)
            assert names is not None, line
            drawn.append(" | ".join(n if n.startswith("osep.") else f"osep.{n}" for n in names[1].split(" | ")))
    assert drawn == layers
