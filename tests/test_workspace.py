"""The monorepo's shape: three distributions with strictly one-way dependencies."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {
    "computegraph": set(),
    "tidu": {"tenferro-computegraph"},
    "tenferro": {"tenferro-computegraph", "tidu", "numpy", "scipy"},
}
DISTRIBUTIONS = {"computegraph": "tenferro-computegraph", "tidu": "tidu", "tenferro": "tenferro"}
"""Import name -> distribution name (the index's `computegraph` is another project)."""


def project(name: str) -> dict:
    return tomllib.loads((ROOT / "packages" / name / "pyproject.toml").read_text())["project"]


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_runtime_dependencies_follow_the_layering(name: str):
    deps = {re.split(r"[ ;<>=!~\[]", d)[0] for d in project(name).get("dependencies", [])}
    assert deps == LAYERS[name]


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_each_package_is_a_complete_distribution(name: str):
    base = ROOT / "packages" / name
    assert (base / "README.md").is_file()
    assert (base / "src" / name / "py.typed").is_file()
    assert any((base / "tests").glob("test_*.py"))
    build = tomllib.loads((base / "pyproject.toml").read_text())["build-system"]
    assert build["build-backend"] == "hatchling.build"


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_versions_agree_with_metadata(name: str):
    from importlib.metadata import version

    module = __import__(name)
    assert module.__version__ == version(DISTRIBUTIONS[name]) == project(name)["version"]
    assert project(name)["name"] == DISTRIBUTIONS[name]


def test_ci_entry_point_runs_the_readme_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "make test" in (ROOT / "README.md").read_text()
