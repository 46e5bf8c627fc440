"""tenferro's modules import only downward through its layers, with one allowed cycle.

``tools/import_layers.py check`` (run by ``make lint``) reads the import statements of
tenferro's source; here it runs on the real tree, which must be clean, and on small
trees built to break each of its rules, which it must report.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_layers", ROOT / "tools" / "import_layers.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_layers"] = module
    spec.loader.exec_module(module)
    return module


layers = _tool()


def test_tenferro_imports_only_downward_with_the_one_allowed_cycle():
    assert layers.check() == []


def test_the_command_line_check_passes_and_the_report_names_the_cycle():
    check = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "import_layers.py"), "check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    report = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "import_layers.py"), "report", "tenferro"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "function-local imports of tenferro: 0 statements" in report
    (cycle,) = [line for line in report.splitlines() if "cycle of" in line]
    members = cycle.split(": ", 1)[1].split(", ")
    assert "tenferro.lax" in members
    assert all(m.startswith(("tenferro.lax", "tenferro.ops", "tenferro.algebra")) for m in members)


def test_every_module_has_a_layer_and_the_layers_follow_the_design():
    files = layers.module_files(layers.source_root("tenferro"), "tenferro")
    table = layers.TENFERRO_LAYERS
    assert all(layers.layer_of(name, table) is not None for name in files)
    expected = {
        "tenferro.errors": 0,
        "tenferro.core.pytree": 0,
        "tenferro.core.primitive": 1,
        "tenferro.core.rules": 1,
        "tenferro.core.checks": 1,
        "tenferro.core.kinds": 1,
        "tenferro.lax": 2,
        "tenferro.ops.batching": 2,
        "tenferro.concrete": 3,
        "tenferro.traced.tensor": 3,
        "tenferro.surface.methods": 4,
        "tenferro.linalg.singular_values": 4,
        "tenferro.transforms.vmap": 5,
        "tenferro.array_api": 6,
        "tenferro": 6,
    }
    assert {name: layers.layer_of(name, table) for name in expected} == expected


# ---------------------------------------------------------------------- the rules


LAYERS = {"pkg.low": 0, "pkg.mid": 1, "pkg.high": 2, "pkg": 3}


def _tree(tmp_path: Path, modules: dict[str, str]) -> Path:
    """A package ``pkg`` under ``tmp_path/src`` with the given module sources."""
    src = tmp_path / "src"
    for name, text in {"pkg": "", **modules}.items():
        parts = name.split(".")
        is_package = name == "pkg" or any(other.startswith(name + ".") for other in modules)
        path = (
            src.joinpath(*parts, "__init__.py")
            if is_package
            else src.joinpath(*parts[:-1], parts[-1] + ".py")
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return src


def _violations(tmp_path: Path, modules: dict[str, str], allowed: tuple[str, ...] = ()) -> str:
    return "\n".join(layers.violations(_tree(tmp_path, modules), "pkg", LAYERS, allowed))


def test_a_clean_tree_has_no_violations(tmp_path):
    found = _violations(
        tmp_path,
        {
            "pkg.low": "X = 1\n",
            "pkg.mid": "from pkg.low import X\n",
            "pkg.high": (
                "from pkg import mid\n"
                "def f():\n"
                "    import json  # loaded on first use: import time\n"
                "    return json\n"
            ),
        },
    )
    assert found == ""


def test_an_upward_import_is_reported_module_level_or_deferred(tmp_path):
    found = _violations(
        tmp_path,
        {
            "pkg.low": "def f():\n    from pkg.high import Y  # needed late\n    return Y\n",
            "pkg.mid": "from pkg.high import Y\n",
            "pkg.high": "Y = 2\n",
        },
    )
    assert "pkg/low.py:2: pkg.low (L0 base) has an import of pkg.high (L2" in found
    assert "pkg/mid.py:1: pkg.mid (L1 core) has an import of pkg.high (L2" in found


def test_a_type_only_upward_import_is_reported_but_closes_no_cycle(tmp_path):
    found = _violations(
        tmp_path,
        {
            "pkg.low": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.mid import Z\n"
            ),
            "pkg.mid": "from pkg.low import TYPE_CHECKING as Z\n",
        },
    )
    assert "pkg/low.py:3: pkg.low (L0 base) has a type-only import of pkg.mid" in found
    assert "cycle" not in found


def test_a_deferred_import_needs_a_comment_saying_why(tmp_path):
    found = _violations(
        tmp_path,
        {
            "pkg.low": "X = 1\n",
            "pkg.mid": (
                "def silent():\n"
                "    from pkg.low import X\n"
                "    return X\n"
                "def pragma_only():\n"
                "    import scipy.linalg  # type: ignore[import-untyped]\n"
                "def explained_above():\n"
                "    # scipy loads on first use: import time\n"
                "    import scipy.special\n"
                "def explained_on_the_line():\n"
                "    import scipy.optimize  # type: ignore[import-untyped]  # import time\n"
            ),
        },
    )
    assert "pkg/mid.py:2: `from pkg.low import X` is inside a function with no comment" in found
    assert "pkg/mid.py:5: `import scipy.linalg` is inside a function" in found
    assert "mid.py:8" not in found
    assert "mid.py:10" not in found


def test_a_cycle_is_reported_with_the_imports_that_close_it(tmp_path):
    found = _violations(
        tmp_path,
        {
            "pkg.mid.a": "from pkg.mid import b\n",
            "pkg.mid.b": "def f():\n    from pkg.mid import a  # late: a cycle all the same\n",
        },
    )
    assert "pkg: an import cycle among 2 modules (pkg.mid.a, pkg.mid.b)" in found
    assert "pkg.mid.a (line 1) -> pkg.mid.b (line 2) -> pkg.mid.a" in found


def test_the_allowed_cycle_passes_and_no_other(tmp_path):
    modules = {
        "pkg.mid.a": "from pkg.mid import b\n",
        "pkg.mid.b": "from pkg.mid import a\n",
    }
    assert _violations(tmp_path / "one", modules, allowed=("pkg.mid.a", "pkg.mid.b")) == ""
    assert "import cycle" in _violations(tmp_path / "two", modules, allowed=("pkg.mid.a",))


def test_a_module_outside_every_layer_is_reported(tmp_path):
    found = _violations(tmp_path, {"pkg.elsewhere": "X = 1\n"})
    assert "pkg.elsewhere is in no layer" in found


@pytest.mark.parametrize(
    ("former", "current"),
    [
        ("tenferro.batching.rules", "tenferro.ops.batching"),
    ],
)
def test_former_module_paths_keep_working(former, current):
    old, new = importlib.import_module(former), importlib.import_module(current)
    assert old.__all__ == new.__all__
    assert all(getattr(old, name) is getattr(new, name) for name in new.__all__)
