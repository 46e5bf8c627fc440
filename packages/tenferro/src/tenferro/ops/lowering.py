"""Lowering compiled programs to XLA through JAX: what each primitive's ``lower`` rule
is written with, and the replay of a program's instructions through those rules.

Each primitive carries its lowering beside its other rules (``TensorPrimitive.lower``,
``lax_name`` or ``no_lowering``). :class:`Lowering` is what a rule receives: the JAX
modules (``lax``, ``jnp``, ``linalg``: ``jax.lax.linalg``), the target ``platform`` and a
way to register a host-side check of values the program computes (``check``: the
degenerate-derivative warnings of spectral rules, run only when the device flags a
tie). :meth:`Lowering.run` replays a :class:`computegraph.CompiledProgram` -- the final
program, after tenferro's own linearize, transpose, merge and CSE -- one instruction at
a time inside the function ``jax.jit`` traces, so JAX never differentiates anything.

JAX is an optional dependency: :func:`load_jax` imports it only when the XLA backend is
asked for, and says what to install when it is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from computegraph import CompiledProgram
from tenferro.core.primitive import TensorPrimitive
from tenferro.errors import BackendUnavailableError, LoweringError

__all__ = [
    "Lowering",
    "has_lowering",
    "load_jax",
    "lowering_gaps",
    "missing_lowerings",
]

INSTALL_HINT = (
    "pip install 'tenferro[xla]' (JAX's CPU wheel), or JAX for your accelerator, e.g. "
    "pip install 'jax[cuda12]'"
)


def load_jax() -> Any:
    """The ``jax`` module; :class:`~tenferro.errors.BackendUnavailableError` saying what
    to install when it is missing."""
    try:
        # jax is an optional dependency (tenferro[xla]): imported only when the XLA
        # backend is asked for, so that `import tenferro` never loads it.
        import jax
        import jax.numpy  # the lowering rules' jax.numpy (a submodule, loaded explicitly)
    except ImportError as error:
        raise BackendUnavailableError(
            "backend='xla'",
            f"the XLA backend needs JAX, which is not installed ({error}); {INSTALL_HINT}",
        ) from None
    return jax


def has_lowering(cls: type[TensorPrimitive]) -> bool:
    """Whether instances of ``cls`` lower to XLA (a ``lower`` rule or a ``lax_name``)."""
    return bool(cls.lax_name) or cls.lower is not TensorPrimitive.lower


def lowering_gaps(classes: Sequence[type[TensorPrimitive]]) -> dict[str, str]:
    """For each class among ``classes`` that does not lower, its name and why (its
    ``no_lowering`` reason, or "no lowering rule")."""
    gaps: dict[str, str] = {}
    for cls in classes:
        if not has_lowering(cls):
            gaps[_class_name(cls)] = cls.no_lowering or "no lowering rule"
    return gaps


def _class_name(cls: type[TensorPrimitive]) -> str:
    family = getattr(cls, "family", "")
    return family or cls.name


def missing_lowerings(program: CompiledProgram) -> list[str]:
    """The operations of ``program`` that cannot lower, each with why (in program order,
    one entry per class): the gate run before a program is traced."""
    seen: set[type] = set()
    found: list[str] = []
    for instruction in program.instructions:
        cls = type(instruction.operation)
        if cls in seen:
            continue
        seen.add(cls)
        if not isinstance(instruction.operation, TensorPrimitive) or not has_lowering(
            cls  # type: ignore[arg-type]
        ):
            op = instruction.operation
            reason = getattr(cls, "no_lowering", "") or (
                "no lowering rule (a user-defined family supplies one with a `lower` method "
                "or `define(..., lower=...)`)"
            )
            found.append(f"{getattr(op, 'name', type(op).__name__)}: {reason}")
    return found


Check = tuple[Callable[..., None], tuple[Any, ...], Any]
"""A host-side check: a function called after a run, on values the program computed,
when its flag (the third entry) holds."""


class Lowering:
    """What a lowering rule is written with (see the module documentation)."""

    __slots__ = ("checks", "jax", "jnp", "lax", "linalg", "platform")

    def __init__(self, jax: Any, platform: str) -> None:
        self.jax = jax
        self.lax = jax.lax
        self.jnp = jax.numpy
        self.linalg = jax.lax.linalg
        self.platform = platform
        """The target devices' platform: ``"cpu"``, ``"gpu"``/``"cuda"``/``"rocm"``, ``"tpu"``."""
        self.checks: list[Check] = []

    # ------------------------------------------------------------------ for rules

    def missing(self, op: TensorPrimitive) -> LoweringError:
        """The error for an operation without a lowering rule (or with a reason for none)."""
        reason = op.no_lowering or (
            "has no lowering to XLA (a user-defined family supplies one with a `lower` "
            "method or `define(..., lower=...)`)"
        )
        return LoweringError(op.name, f"{reason}; run this program with backend='numpy'")

    def refuse(self, op: Any, reason: str) -> LoweringError:
        """The error for an instance a rule cannot lower (a dtype, a platform, an extent)."""
        name = op if isinstance(op, str) else op.name
        return LoweringError(name, f"{reason}; run this program with backend='numpy'")

    def full(self, shape: Sequence[int], value: Any, dtype: Any) -> Any:
        """An array of ``shape`` filled with ``value`` in ``dtype``."""
        return self.lax.full(tuple(shape), value, dtype)

    def check(self, callback: Callable[..., None], *values: Any, when: Any = True) -> None:
        """Call ``callback`` on the values ``values`` take, after a run of the program
        in which ``when`` (a boolean the program computes, or ``True``) holds: host-side
        checks that warn, such as the degenerate-derivative warning. The flags of a
        call's checks come to the host together; the values (concrete arrays) only
        when the callback reads them."""
        self.checks.append((callback, values, when))

    @property
    def on_cpu(self) -> bool:
        return self.platform == "cpu"

    # ------------------------------------------------------------------ programs

    def run(self, program: CompiledProgram, inputs: Sequence[Any]) -> list[Any]:
        """The outputs of ``program`` on the (JAX) ``inputs``, in ``program.input_keys``
        order: each instruction through its operation's lowering rule."""
        slots: list[Any] = [None] * program.n_slots
        for slot, value in zip(program.input_slots, inputs, strict=True):
            slots[slot] = value
        for slot, value in program.constants.items():
            slots[slot] = self.jnp.asarray(value)  # folded when the program was compiled
        count = len(program.instructions)
        for position, (operation, operands, outputs) in enumerate(program.instructions):
            rule = getattr(operation, "lower", None)
            if rule is None:
                raise LoweringError(
                    getattr(operation, "name", type(operation).__name__),
                    "is not a tenferro primitive and has no lowering to XLA",
                )
            try:
                result = rule(self, *[slots[i] for i in operands])
            except LoweringError:
                raise
            except Exception as error:
                error.add_note(f"while lowering instruction {position} of {count}: {operation!r}")
                raise
            if len(outputs) == 1:
                slots[outputs[0]] = result
            else:
                values = tuple(result)
                if len(values) != len(outputs):
                    raise LoweringError(
                        operation.name,  # type: ignore[attr-defined]
                        f"its lowering gave {len(values)} value(s) for {len(outputs)} outputs",
                    )
                for slot, value in zip(outputs, values, strict=True):
                    slots[slot] = value
        return [slots[slot] for slot in program.output_slots]
