"""Interning under threads: while keys of the same structures are made and dropped in
eight threads at once, two live keys of one structure are always one object, and the
weak-reference callbacks that drop dead entries never fail (no ``Exception ignored``
noise) nor drop the live entry that replaced their own."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cg_support import ScalarOp

from computegraph import Input, OperationKey


@pytest.fixture
def unraisable() -> Iterator[list[Any]]:
    """The exceptions Python reports as ``Exception ignored`` (from callbacks), while fast
    thread switching makes the races likely."""
    caught: list[Any] = []
    hook, interval = sys.unraisablehook, sys.getswitchinterval()
    sys.unraisablehook = lambda info: caught.append(info.exc_value)
    sys.setswitchinterval(1e-6)
    try:
        yield caught
    finally:
        sys.unraisablehook = hook
        sys.setswitchinterval(interval)


def _run(work: Callable[[int], None], threads: int = 8) -> list[BaseException]:
    failures: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            work(index)
        except BaseException as error:  # reported to the test below
            failures.append(error)

    workers = [threading.Thread(target=guarded, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return failures


def _input_keys(index: int) -> None:
    for i in range(6000):
        first = Input(("probe", i % 5))
        second = Input(("probe", i % 5))
        assert first is second, "two live input keys of one structure"
        del first, second


def _operation_keys(index: int) -> None:
    for i in range(3000):
        x = Input(("x", i % 3))
        first = OperationKey(ScalarOp.NEG, (x,))
        second = OperationKey(ScalarOp.NEG, (x,))
        assert first is second, "two live operation keys of one structure"
        third = OperationKey(ScalarOp.ADD, (x, x))
        assert third is OperationKey(ScalarOp.ADD, (x, x))
        del first, second, third


@pytest.mark.parametrize("work", [_input_keys, _operation_keys])
def test_live_keys_stay_unique_and_callbacks_stay_quiet(
    work: Callable[[int], None], unraisable: list[Any]
) -> None:
    failures = _run(work)
    assert failures == []
    assert unraisable == []
