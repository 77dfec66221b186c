"""The package's layers import one way: core <- backends <- families <- (torch, tools, cli).

No family imports another family: code a second family needs lives in core/ or backends/.
Every import in every module counts, the ones inside functions too (a lazy import is still a
dependency), so the test parses the sources rather than importing them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "baracuda"

#: What each layer may import from the package, besides itself.
ALLOWED = {
    "core": {"core"},
    "backends": {"core", "backends"},
    "families": {"core", "backends"},  # and its own family, checked separately
    "top": {"core", "backends", "families", "top"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> tuple[str, str | None]:
    """(layer, family) of a baracuda module name."""
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in ("core", "errors"):
        return "core", None
    if len(parts) >= 2 and parts[1] == "backends":
        return "backends", None
    if len(parts) >= 3 and parts[1] == "families":
        return "families", parts[2]
    if module == "baracuda.families":
        return "families", None
    return "top", None


def _imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, absolute module) for every import of a baracuda module in `path`."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from pkg import name` may import the submodule pkg.name
            found += [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return [(line, m) for line, m in found if m == "baracuda" or m.startswith("baracuda.")]


def _violations() -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        layer, family = _layer(module)
        for line, target in _imports(path, module):
            if target == "baracuda" or target.startswith("baracuda.__"):
                t_layer, t_family = "top", None
            else:
                t_layer, t_family = _layer(target)
            where = f"{path.relative_to(SRC)}:{line} imports {target}"
            if layer == "families" and t_layer == "families":
                if family is not None and t_family not in (None, family):
                    bad.append(f"{where}: a family imports another family")
                continue
            if t_layer not in ALLOWED[layer]:
                bad.append(f"{where}: {layer} must not import {t_layer}")
    return bad


def test_imports_follow_the_layers():
    bad = _violations()
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


@pytest.mark.parametrize("source, layer", [
    ("from ..segment.sort import cdiv", "families"),
    ("from ...tools.bench import time_fn", "families"),
])
def test_the_walk_sees_a_violation(tmp_path, monkeypatch, source, layer):
    """The walk is not vacuous: a planted cross-family or upward import is reported."""
    fam = tmp_path / "baracuda" / "families" / "alpha"
    fam.mkdir(parents=True)
    (fam / "plans.py").write_text(source + "\n")
    monkeypatch.setattr(__import__(__name__), "SRC", tmp_path)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "baracuda")
    assert any(layer in v or "another family" in v for v in _violations())
