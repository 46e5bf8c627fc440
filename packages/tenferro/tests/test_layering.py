"""tenferro imports only the standard library and its declared dependencies."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import requires

ALLOWED = {"computegraph", "tidu", "numpy", "scipy"}


def test_import_pulls_in_only_declared_layers():
    code = (
        "import sys, json; before = set(sys.modules); import tenferro; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    loaded = json.loads(subprocess.check_output([sys.executable, "-c", code], text=True))
    roots = {name.split(".")[0] for name in loaded} - {"tenferro"}
    foreign = sorted(
        root for root in roots if root not in sys.stdlib_module_names and root not in ALLOWED
    )
    assert foreign == []
    for name in (
        "torch",
        "jax",
    ):
        assert name not in roots


def test_declared_dependencies():
    declared = requires("tenferro") or []
    runtime = [r for r in declared if "extra ==" not in r]
    names = [re.split(r"[ ;<>=!~\[]", requirement)[0] for requirement in runtime]
    assert sorted(names) == sorted(["tenferro-computegraph", "tidu", "numpy", "scipy"])
    pins = [r for r in runtime if r.startswith(("tidu", "tenferro-"))]
    assert sorted(pins) == ["tenferro-computegraph==0.1.0", "tidu==0.1.0"]  # exact siblings
    # the XLA backend's JAX is the optional extra `xla`, never a runtime dependency
    extras = [r for r in declared if "extra ==" in r]
    assert [re.split(r"[ ;<>=!~\[]", r)[0] for r in extras] == ["jax"]
    assert all(r.replace('"', "'").endswith("extra == 'xla'") for r in extras)


def test_version():
    import tenferro

    assert tenferro.__version__ == "0.1.0"
