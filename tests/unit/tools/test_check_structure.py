"""tools/check_structure.py on small synthetic package trees: what counts as an import, a cycle,
a package's size and a wire import, and what `make lint` sees (exit code, one line per problem)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.check_structure import (
    MAX_PACKAGE_MODULES,
    MAX_WIRE_IMPORTERS,
    find_modules,
    import_cycles,
    import_graph,
    main,
    problems,
)


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package `pkg` under tmp_path holding `files` (relative path -> source); every directory
    gets an empty __init__.py unless `files` gives one."""
    src = tmp_path / "pkg"
    for rel, text in files.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for directory in [src, *(p for p in src.rglob("*") if p.is_dir())]:
        init = directory / "__init__.py"
        if not init.exists():
            init.write_text("", encoding="utf-8")
    return src


def test_a_clean_tree_has_no_problems_and_exits_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tree(tmp_path, {"a.py": "import pkg.b\n", "b.py": "from pkg.sub import c\n", "sub/c.py": "x = 1\n"})
    assert problems(src) == []
    assert main([str(src)]) == 0
    assert capsys.readouterr().out.strip().splitlines() == [f"structure: 0 problem(s) in {src}"]


def test_module_names_follow_the_directory_tree(tmp_path: Path) -> None:
    src = tree(tmp_path, {"a.py": "", "sub/b.py": ""})
    assert set(find_modules(src)) == {"pkg", "pkg.a", "pkg.sub", "pkg.sub.b"}


def test_imports_resolve_to_modules_packages_and_relative_targets(tmp_path: Path) -> None:
    src = tree(
        tmp_path,
        {
            "a.py": "from pkg.b import f\nimport os\n",
            "b.py": "def f() -> None: ...\n",
            "sub/c.py": "from .. import a\nfrom ..b import f\nfrom . import d\n",
            "sub/d.py": "import pkg.sub\n",
            "sub/__init__.py": "from .d import *\n",
        },
    )
    graph = import_graph(find_modules(src), "pkg")
    assert graph["pkg.a"] == {"pkg.b"}  # `f` is not a module; the stdlib is not counted
    assert graph["pkg.sub.c"] == {"pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub.d"}
    assert graph["pkg.sub.d"] == {"pkg.sub"}
    assert graph["pkg.sub"] == {"pkg.sub.d"}


def test_a_cycle_counts_however_the_import_is_hidden(tmp_path: Path) -> None:
    src = tree(
        tmp_path,
        {
            "a.py": "import pkg.b\n",
            "b.py": "def f() -> None:\n    from pkg import a\n",
            "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.d import X\n",
            "d.py": "from pkg.c import Y\nX = 1\n",
        },
    )
    assert problems(src) == ["import cycle: pkg.a <-> pkg.b", "import cycle: pkg.c <-> pkg.d"]


def test_a_package_init_that_imports_its_children_back_is_a_cycle(tmp_path: Path) -> None:
    files = {
        "__init__.py": "from pkg.a import f\n",
        "a.py": "from pkg import b\ndef f() -> None: ...\n",
        "b.py": "",
    }
    assert problems(tree(tmp_path / "with", files)) == ["import cycle: pkg <-> pkg.a"]
    files["__init__.py"] = '"""Imports nothing."""\n'
    assert problems(tree(tmp_path / "without", files)) == []


def test_cycles_are_found_without_recursion_limits() -> None:
    n = 5000
    ring = {f"pkg.m{i}": {f"pkg.m{(i + 1) % n}"} for i in range(n)}
    ring["pkg.tail"] = {"pkg.m0"}
    (group,) = import_cycles(ring)
    assert len(group) == n and "pkg.tail" not in group
    two = {"x": {"y"}, "y": {"x", "z"}, "z": {"w"}, "w": {"z"}, "v": set()}
    assert import_cycles(two) == [["w", "z"], ["x", "y"]]


def test_a_package_holding_too_many_modules(tmp_path: Path) -> None:
    files = {f"big/m{i}.py": "" for i in range(MAX_PACKAGE_MODULES + 1)}
    files |= {f"ok/m{i}.py": "" for i in range(MAX_PACKAGE_MODULES)}
    files |= {f"ok/sub{i}/x.py": "" for i in range(3)}  # sub-packages do not count towards ok
    assert problems(tree(tmp_path, files)) == [
        f"package too large: pkg.big holds {MAX_PACKAGE_MODULES + 1} modules (limit {MAX_PACKAGE_MODULES})"
    ]


def test_wire_imports_outside_protocol_node_and_cli(tmp_path: Path) -> None:
    files = {"protocol/frames.py": "", "protocol/codec.py": "from pkg.protocol import frames\n"}
    files |= {"node/n.py": "import pkg.protocol.frames\n", "cli/c.py": "from pkg.protocol import codec\n"}
    files |= {f"query/q{i}.py": "from pkg.protocol.frames import X\n" for i in range(MAX_WIRE_IMPORTERS)}
    assert problems(tree(tmp_path / "at_limit", files)) == []
    files["data/d.py"] = "def f() -> None:\n    from ..protocol import codec\n"
    assert problems(tree(tmp_path / "over", files)) == [
        f"wire imports: {MAX_WIRE_IMPORTERS + 1} modules outside pkg.protocol, pkg.node, pkg.cli import"
        f" pkg.protocol (limit {MAX_WIRE_IMPORTERS}): pkg.data.d, "
        + ", ".join(f"pkg.query.q{i}" for i in range(MAX_WIRE_IMPORTERS))
    ]


def test_main_prints_one_line_per_problem_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"a.py": "import pkg.b\n", "b.py": "import pkg.a\n"}
    files |= {f"big/m{i}.py": "" for i in range(MAX_PACKAGE_MODULES + 1)}
    src = tree(tmp_path, files)
    assert main([str(src)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "import cycle: pkg.a <-> pkg.b"
    assert out[1].startswith("package too large: pkg.big ")
    assert out[2] == f"structure: 2 problem(s) in {src}"


def test_main_refuses_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nowhere")]) == 2
    assert "no package directory" in capsys.readouterr().err
