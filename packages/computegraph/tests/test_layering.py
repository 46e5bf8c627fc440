"""computegraph depends on the standard library only and on no higher layer."""

from __future__ import annotations

import json
import subprocess
import sys


def test_import_pulls_in_only_the_standard_library():
    code = (
        "import sys, json; before = set(sys.modules); import computegraph; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    loaded = json.loads(subprocess.check_output([sys.executable, "-c", code], text=True))
    roots = {name.split(".")[0] for name in loaded}
    foreign = sorted(
        root for root in roots if root != "computegraph" and root not in sys.stdlib_module_names
    )
    assert foreign == []
    assert "tidu" not in roots
    assert "tenferro" not in roots
    assert "numpy" not in roots


def test_declared_dependencies_are_empty():
    from importlib.metadata import requires

    # Published as `tenferro-computegraph` (the index's `computegraph` is another project).
    assert not requires("tenferro-computegraph")
