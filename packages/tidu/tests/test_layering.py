"""tidu imports only the standard library and its declared dependencies."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import requires

ALLOWED = {"computegraph"}


def test_import_pulls_in_only_declared_layers():
    code = (
        "import sys, json; before = set(sys.modules); import tidu; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    loaded = json.loads(subprocess.check_output([sys.executable, "-c", code], text=True))
    roots = {name.split(".")[0] for name in loaded} - {"tidu"}
    foreign = sorted(
        root for root in roots if root not in sys.stdlib_module_names and root not in ALLOWED
    )
    assert foreign == []
    for name in (
        "tenferro",
        "numpy",
        "scipy",
    ):
        assert name not in roots


def test_declared_dependencies():
    names = [re.split(r"[ ;<>=!~\[]", requirement)[0] for requirement in requires("tidu") or []]
    assert sorted(names) == sorted(["tenferro-computegraph"])
    assert requires("tidu") == ["tenferro-computegraph==0.1.0"]  # siblings pin exactly


def test_version():
    import tidu

    assert tidu.__version__ == "0.1.0"
