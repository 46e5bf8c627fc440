"""What the package index sees: free names, exact sibling pins, a license, complete
metadata and READMEs that stand on their own (issue 8, item 16). `make dist` checks the
built wheels by installing them with the index reachable."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["computegraph", "tidu", "tenferro"]
SIBLINGS = {"tenferro-computegraph", "tidu", "tenferro"}


def pyproject(name: str) -> dict:
    return tomllib.loads((ROOT / "packages" / name / "pyproject.toml").read_text())


@pytest.mark.parametrize("name", PACKAGES)
def test_siblings_are_pinned_to_the_exact_released_version(name: str):
    project = pyproject(name)["project"]
    for requirement in project.get("dependencies", []):
        base = re.split(r"[ ;<>=!~\[]", requirement)[0]
        if base in SIBLINGS:
            sibling = {"tenferro-computegraph": "computegraph"}.get(base, base)
            version = pyproject(sibling)["project"]["version"]
            assert requirement == f"{base}=={version}"


def test_the_computegraph_layer_has_a_distribution_name_of_its_own():
    assert pyproject("computegraph")["project"]["name"] == "tenferro-computegraph"
    wheel = pyproject("computegraph")["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["src/computegraph"]  # the import name is unchanged


@pytest.mark.parametrize("name", PACKAGES)
def test_metadata_is_complete(name: str):
    project = pyproject(name)["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    license_text = (ROOT / "packages" / name / "LICENSE").read_text()
    assert license_text == (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License")
    classifiers = project["classifiers"]
    assert "Typing :: Typed" in classifiers
    assert any(c.startswith("Development Status") for c in classifiers)
    assert not any(c.startswith("License ::") for c in classifiers)  # PEP 639: expression
    assert project["urls"]
    assert (ROOT / "packages" / name / "src" / name / "py.typed").is_file()


@pytest.mark.parametrize("name", PACKAGES)
def test_readmes_stand_on_their_own(name: str):
    """The index renders a package README alone: relative links would be dead there."""
    text = (ROOT / "packages" / name / "README.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert all(link.startswith("https://") for link in links), links
    assert "../" not in text


def test_numpy_minimum_is_numpy_2():
    dependencies = pyproject("tenferro")["project"]["dependencies"]
    assert "numpy>=2.0" in dependencies
