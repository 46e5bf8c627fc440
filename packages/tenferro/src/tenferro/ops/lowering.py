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

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from computegraph import CompiledProgram
from tenferro.core.primitive import TensorPrimitive
from tenferro.errors import BackendUnavailableError, LoweringError
from tenferro.ops.elementwise import Conj

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
        order: each instruction through its operation's lowering rule, complex
        conjugates deferred (see :class:`_Forms`)."""
        forms = _Forms(self.lax, program)
        for slot, value in zip(program.input_slots, inputs, strict=True):
            if isinstance(value, np.ndarray):  # captured data embedded as a constant
                forms.store_constant(slot, value, self.jnp)
            else:
                forms.store(slot, value)
        for slot, value in program.constants.items():  # folded when the program was compiled
            forms.store_constant(slot, np.asarray(value), self.jnp)
        count = len(program.instructions)
        for position, (operation, operands, outputs) in enumerate(program.instructions):
            rule = getattr(operation, "lower", None)
            if rule is None:
                raise LoweringError(
                    getattr(operation, "name", type(operation).__name__),
                    "is not a tenferro primitive and has no lowering to XLA",
                )
            if type(operation) is Conj:
                forms.conjugate(operands[0], outputs[0])
                continue
            real = False
            if getattr(operation, "conj_commutes", False):
                real = forms.all_real(operands)
                conjugated = not real and forms.route(operation, operands, outputs[0])
            else:
                conjugated = False
            values = forms.conjugates(operands) if conjugated else forms.values(operands)
            try:
                result = rule(self, *values)
            except LoweringError:
                raise
            except Exception as error:
                error.add_note(f"while lowering instruction {position} of {count}: {operation!r}")
                raise
            if len(outputs) == 1:
                forms.store(outputs[0], result, conjugated, real)
            else:
                results = tuple(result)
                if len(results) != len(outputs):
                    raise LoweringError(
                        operation.name,  # type: ignore[attr-defined]
                        f"its lowering gave {len(results)} value(s) for {len(outputs)} outputs",
                    )
                for slot, value in zip(outputs, results, strict=True):
                    forms.store(slot, value)
        return forms.values(program.output_slots)


class _Forms:
    """Each value's two forms -- itself and its complex conjugate -- as far as known.

    The lowering defers conjugation. ``conj`` computes nothing: its result is its
    operand with the forms swapped (slots are kept as a root slot and a parity). An
    operation that commutes with conjugation (``conj_commutes``: structural moves,
    sums, products, the real part) runs on its operands' conjugates when that needs
    fewer conjugated elements than running on their values, its result then being the
    conjugate of its output. Its price counts the result too, when the route gives it
    in the form it is not preferred in (:func:`_preferences`): it will be conjugated
    where it is read. A missing form is computed when first asked for, once per
    root. In the adjoint convention each transposed product conjugates its fixed
    operand (``ct @ conj(b)``): carried as conjugates, cotangents meet primal values
    unconjugated, and most of those conjugations are never emitted. Values are
    unchanged -- conjugation commutes with these operations exactly -- except for the
    sign of an imaginary part that is exactly zero: ``conj(x + 0j)`` is ``x - 0j`` but
    a complex value computed from real ones alone stands for its own conjugate here,
    and ``+0.0 + -0.0`` is ``+0.0`` whichever way round. XLA's own simplifier takes the
    same freedom (it folds ``x + 0.0`` to ``x``, so ``-0.0 + 0.0`` gives ``-0.0``).
    """

    __slots__ = ("conj", "lax", "parity", "plain", "preferred", "root")

    def __init__(self, lax: Any, program: CompiledProgram) -> None:
        count = program.n_slots
        self.lax = lax
        self.plain: list[Any] = [None] * count
        self.conj: list[Any] = [None] * count
        self.root = list(range(count))
        self.parity = bytearray(count)
        self.preferred = _preferences(program)

    def store(self, slot: int, value: Any, conjugated: bool = False, real: bool = False) -> None:
        """Record ``value`` as the slot's value, or as its conjugate (``conjugated``);
        a value of a real dtype, or known to be ``real``, is its own conjugate."""
        if real or not _is_complex(value):
            self.plain[slot] = self.conj[slot] = value
        elif conjugated:
            self.conj[slot] = value
        else:
            self.plain[slot] = value

    def store_constant(self, slot: int, array: np.ndarray[Any, Any], jnp: Any) -> None:
        """Record a constant of the program: both forms, the conjugate computed here."""
        value = jnp.asarray(array)
        self.store(slot, value)
        if _is_complex(value):
            self.conj[slot] = jnp.asarray(np.conj(array))

    def conjugate(self, source: int, target: int) -> None:
        """``target = conj(source)``: the same root, the other parity."""
        self.root[target] = self.root[source]
        self.parity[target] = self.parity[source] ^ 1

    def _form(self, slot: int, conjugated: int) -> Any:
        root = self.root[slot]
        flipped = conjugated ^ self.parity[slot]
        want, other = (self.conj, self.plain) if flipped else (self.plain, self.conj)
        value = want[root]
        if value is None:
            value = want[root] = self.lax.conj(other[root])
        return value

    def _known(self, slot: int, conjugated: int) -> bool:
        root = self.root[slot]
        forms = self.conj if conjugated ^ self.parity[slot] else self.plain
        return forms[root] is not None

    def all_real(self, slots: Sequence[int]) -> bool:
        """Whether each of ``slots`` is its own conjugate (real-valued): an operation
        commuting with conjugation then gives a real-valued result too."""
        for slot in slots:
            root = self.root[slot]
            if self.plain[root] is None or self.plain[root] is not self.conj[root]:
                return False
        return True

    def values(self, slots: Sequence[int]) -> list[Any]:
        return [self._form(slot, 0) for slot in slots]

    def conjugates(self, slots: Sequence[int]) -> list[Any]:
        return [self._form(slot, 1) for slot in slots]

    def route(self, operation: Any, slots: Sequence[int], result: int) -> bool:
        """Whether to run ``operation`` on the operands' conjugates: the route
        conjugating fewer elements, counting those of the operands it lacks in that
        form and, when the route gives the result in the form it is not preferred in,
        the result's (it will be conjugated when read)."""
        for_values = for_conjugates = largest = 0
        for slot in slots:
            size = math.prod(self._form_known(slot).shape)
            largest = max(largest, size)
            if not self._known(slot, 0):
                for_values += size
            elif not self._known(slot, 1):
                for_conjugates += size
        metas = getattr(operation, "outputs", ())  # cotangent sums carry none
        size = math.prod(metas[0].shape) if metas else largest
        if self.preferred[result]:
            for_values += size
        else:
            for_conjugates += size
        return for_conjugates < for_values

    def _form_known(self, slot: int) -> Any:
        root = self.root[slot]
        value = self.plain[root]
        return self.conj[root] if value is None else value


def _preferences(program: CompiledProgram) -> bytearray:
    """Per slot, the form (1: the conjugate) it is preferred in.

    A value read as it is -- a program output, an operand of an operation that does
    not commute with conjugation -- is preferred in the form read (through the
    parity of ``conj`` chains); an operand of one that commutes, in the form that
    operation's result is preferred in (decided first: the program is walked
    backwards). Reads vote, the majority decides; a value nothing votes for is
    preferred conjugated when it derives from a real-valued constant (the seed of a
    gradient: a cotangent), as a value otherwise."""
    count = program.n_slots
    root = list(range(count))
    parity = bytearray(count)
    seeded = bytearray(count)
    for slot, value in program.constants.items():
        seeded[slot] = not np.iscomplexobj(value) or not np.any(np.imag(value))
    for operation, operands, outputs in program.instructions:
        if type(operation) is Conj:
            root[outputs[0]] = root[operands[0]]
            parity[outputs[0]] = parity[operands[0]] ^ 1
        if any(seeded[slot] for slot in operands):
            for slot in outputs:
                seeded[slot] = 1
    votes = [0] * count  # > 0: read conjugated, < 0: read as values
    for slot in program.output_slots:
        votes[root[slot]] += 1 if parity[slot] else -1
    preferred = bytearray(count)
    for operation, operands, outputs in reversed(program.instructions):
        if type(operation) is Conj:
            continue
        for slot in outputs:
            vote = votes[slot]
            preferred[slot] = vote > 0 if vote else seeded[slot]
        form = preferred[outputs[0]] if getattr(operation, "conj_commutes", False) else 0
        for slot in operands:
            votes[root[slot]] += 1 if form ^ parity[slot] else -1
    return preferred


def _is_complex(value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    return dtype is not None and dtype.kind == "c"
