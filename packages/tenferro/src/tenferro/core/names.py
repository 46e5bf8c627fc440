"""What ``dir()`` of a public module lists: its own public names, so tab completion
offers the module's API and not the modules it imports (``np``, ``Any``, ``builtins``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["public_dir"]


def public_dir(names: Iterable[str]) -> Callable[[], list[str]]:
    """A module-level ``__dir__`` (PEP 562) listing ``names`` (the module's ``__all__``)."""
    listed = sorted(names)

    def __dir__() -> list[str]:  # noqa: N807  (the module protocol's name)
        return list(listed)

    return __dir__
