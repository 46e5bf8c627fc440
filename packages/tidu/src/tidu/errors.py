"""Exceptions raised by tidu."""

from __future__ import annotations

from typing import Any, Literal

__all__ = [
    "ADRuleError",
    "ADRuleKind",
    "PassReuseError",
    "ReleasedGraphError",
    "RuleContractError",
    "TransformError",
]

ADRuleKind = Literal["jvp", "transpose"]


class ADRuleError(NotImplementedError):
    """A primitive has no rule (or refuses one) for a transform: never a silent zero.

    ``op`` is the operation (or its name) and ``rule`` is ``"jvp"`` or ``"transpose"``.
    Rules may raise it themselves; every transform propagates it unchanged.
    """

    op: Any
    rule: ADRuleKind

    def __init__(self, op: Any, rule: ADRuleKind, detail: str | None = None) -> None:
        if rule not in ("jvp", "transpose"):
            raise ValueError(f"ADRuleError: rule must be 'jvp' or 'transpose', got {rule!r}")
        self.op = op
        self.rule = rule
        self.detail = detail
        message = f"unsupported {rule} AD rule for {op}"
        super().__init__(f"{message}: {detail}" if detail else message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ADRuleError, (self.op, self.rule, self.detail))


class RuleContractError(ValueError):
    """A rule or caller broke the AD contract (wrong arity, bad ids, inactive cotangent, ...)."""


class TransformError(ValueError):
    """A transform was called wrongly (reused pass id, alias cycle, misuse of the eager API)."""


class PassReuseError(TransformError):
    """A ``linearize`` pass id was already used by a transform whose graph is in the view."""


class ReleasedGraphError(TransformError):
    """A pass needs the values a tape node saved, and an earlier backward pass that did
    not retain the graph released them. ``node`` is the tape node (a
    :class:`tidu.eager.Trace`); ``mode`` is ``"backward"`` or ``"forward"``."""

    def __init__(self, node: Any, mode: str) -> None:
        self.node = node
        self.mode = mode
        super().__init__(
            f"{mode}: the values {node!r} saved for differentiation were released by an "
            f"earlier backward pass; run that pass with retain_graph=True to differentiate "
            f"through the same graph again"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReleasedGraphError, (self.node, self.mode))
