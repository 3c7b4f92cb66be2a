"""pyproject.toml declares every package sitewalk imports, each with an upper bound the installed
version is inside: a new import of an undeclared package fails here, not on a user's machine."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# The extras that are part of sitewalk (render), not of its development (test).
EXTRAS = ("render",)


def requirements() -> list[Requirement]:
    extras = PROJECT["optional-dependencies"]
    return [Requirement(line) for line in [*PROJECT["dependencies"], *(line for extra in EXTRAS for line in extras[extra])]]


def imported_modules() -> dict[str, set[str]]:
    """Each module sitewalk's code imports, with the files that import it (every import, at the
    top, in a function or for type checking only; relative ones left out)."""
    modules: dict[str, set[str]] = {}
    for path in sorted((ROOT / "sitewalk").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                modules.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return modules


def distribution(module: str, owners: dict[str, list[str]]) -> str | None:
    """The distribution that provides ``module``: by its top-level package, or for a namespace
    package several distributions share (zope), the one named after its first two levels."""
    top, _, rest = module.partition(".")
    candidates = owners.get(top, [])
    if len(candidates) > 1:
        second = f"{top}.{rest.partition('.')[0]}"
        candidates = [name for name in candidates if canonicalize_name(name) == canonicalize_name(second)]
    return candidates[0] if len(candidates) == 1 else None


def test_every_imported_package_is_declared():
    declared = {canonicalize_name(requirement.name) for requirement in requirements()}
    owners = packages_distributions()
    undeclared: dict[str, str] = {}
    for module, files in imported_modules().items():
        top = module.partition(".")[0]
        if top in sys.stdlib_module_names or top == "sitewalk":
            continue
        name = distribution(module, owners)
        if name is None or canonicalize_name(name) not in declared:
            undeclared[module] = f"{name or 'no installed distribution'} (imported in {', '.join(sorted(files))})"
    assert not undeclared, f"imported by sitewalk but not declared in pyproject.toml's dependencies: {undeclared}"


def test_every_dependency_has_an_upper_bound_the_installed_version_is_in():
    for requirement in requirements():
        bounded = any(spec.operator in ("<", "<=", "~=", "==") for spec in requirement.specifier)
        assert bounded, f"{requirement} has no upper bound: a new major version would be installed untested"
        installed = version(requirement.name)
        assert requirement.specifier.contains(installed, prereleases=True), (
            f"{requirement.name} {installed} is installed, outside pyproject.toml's {requirement}"
        )
