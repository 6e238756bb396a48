"""scripts/import_graph.py counts function-level imports and finds cycles."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "import_graph.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", _SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module
    spec.loader.exec_module(module)
    return module


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_cycle_hidden_in_a_function_is_found(tmp_path: Path) -> None:
    graph_mod = _load()
    root = _write(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg import b\n",
            "b.py": "def f():\n    from .sub import c\n",
            "sub/__init__.py": "",
            "sub/c.py": (
                "from typing import Any\nX: dict[str, Any] = {}\ndef g():\n    import pkg.a\n"
            ),
            "d.py": "from .b import f\n",
        },
    )
    graph = graph_mod.build_graph(root, "pkg")
    assert ("pkg.b", "pkg.sub.c") in graph.edges
    assert ("pkg.d", "pkg.b") in graph.edges
    assert graph.cycles() == [["pkg.a", "pkg.b", "pkg.sub.c"]]
    assert graph.dict_any_annotations == 1


def test_an_acyclic_package_has_no_cycle(tmp_path: Path) -> None:
    graph_mod = _load()
    root = _write(tmp_path, {"__init__.py": "", "a.py": "import pkg.b\n", "b.py": "import os\n"})
    graph = graph_mod.build_graph(root, "pkg")
    assert graph.edges == (("pkg.a", "pkg.b"),)
    assert graph.cycles() == []


def test_evalarc_has_no_cycle_and_no_upward_arrow() -> None:
    graph_mod = _load()
    root = _SCRIPT.parents[1] / "evalarc"
    graph = graph_mod.build_graph(root, "evalarc")
    assert graph.cycles() == []
    assert graph_mod.upward_arrows(graph) == []
    # Every module sits in a layer: a new top-level module must be placed in LAYERS.
    assert all(graph_mod.layer_of(module) is not None for module in graph.modules)


def test_an_upward_arrow_is_found(tmp_path: Path) -> None:
    graph_mod = _load()
    root = _write(
        tmp_path,
        {
            "__init__.py": "",
            "pages/__init__.py": "",
            "pages/x.py": "def f():\n    from evalarc.reports import y\n",
            "reports/__init__.py": "",
            "reports/y.py": "import evalarc.pages.x\n",
        },
    )
    graph = graph_mod.build_graph(root, "evalarc")
    upward = graph_mod.upward_arrows(graph)
    assert ("evalarc.pages.x", "evalarc.reports.y") in upward
    assert {importer for importer, _ in upward} == {"evalarc.pages.x"}
