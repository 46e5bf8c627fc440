"""The documentation's examples run, and printed listings shown in docs are real.

Each ``python`` block of a ``docs/*.md`` page (and of the README) runs in one namespace per page, in
order. A ``text`` block right after a ``python`` block must appear verbatim in what
that block printed. Every script in ``docs/examples/`` must run successfully.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def pages() -> list[Path]:
    packages = sorted((DOCS.parent / "packages").glob("*/README.md"))
    return [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md", *packages]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(DOCS.parent)))
def test_page_examples_run(page: Path):
    module = types.ModuleType(f"docs_{page.stem}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    namespace = module.__dict__
    printed = ""
    blocks = FENCE.findall(page.read_text())
    for position, (language, code) in enumerate(blocks):
        if language == "python":
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                exec(compile(code, f"{page.name}[block {position}]", "exec"), namespace)
            printed = buffer.getvalue()
        elif language == "text" and position > 0 and blocks[position - 1][0] == "python":
            assert code.strip() in printed, f"{page.name}: block {position} does not match output"


def test_docs_have_examples():
    assert any(FENCE.search(page.read_text()) for page in pages())


SLOW_SCRIPTS = {"demo.py"}
"""The showcase (``make demo``): a variational ground state and its checks."""


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(path, marks=[pytest.mark.slow] if path.name in SLOW_SCRIPTS else [])
        for path in sorted((DOCS / "examples").glob("*.py"))
    ],
    ids=lambda p: p.name,
)
def test_example_scripts_run(script: Path):
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_primitive_table_lists_every_primitive():
    import tenferro as tf

    text = (DOCS / "tenferro.md").read_text()
    table = text[text.index("## The primitive catalogue") :]
    for name in tf.ops.__all__:
        primitive = getattr(tf.ops, name)
        if primitive is tf.ops.TensorPrimitive:
            continue
        assert f"`{primitive.name}`" in table, primitive.name
