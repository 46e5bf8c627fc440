"""Identity: structural equality through interning, roles in identity, immutability."""

from __future__ import annotations

import copy
import gc
import pickle
import threading

import pytest
from cg_support import ScalarOp

from computegraph import (
    PRIMARY,
    Derived,
    GraphBuildError,
    Input,
    Linearized,
    OperationKey,
    Primary,
    first_output,
    interned_key_count,
)

Add, Mul, Neg, Dup = ScalarOp.ADD, ScalarOp.MUL, ScalarOp.NEG, ScalarOp.DUP


def test_equal_structure_is_the_same_object():
    first = Derived(OperationKey(Mul, [Input("x"), Input("y")]), 0)
    second = Derived(OperationKey(Mul, [Input("x"), Input("y")]), 0)
    assert first is second


def test_first_output_is_the_derived_key_of_slot_zero():
    x, y = Input("fo-x"), Input("fo-y")
    fresh = first_output(Mul, (x, y))  # a miss: the key is made
    assert fresh is Derived(OperationKey(Mul, [x, y]), 0)
    assert first_output(Mul, (x, y)) is fresh  # a hit
    assert first_output(Mul, (y, x)) is not fresh
    assert first_output(Add, (x, y)) is not fresh
    assert first_output(Dup, (x,)) is Derived(OperationKey(Dup, [x]), 0)
    assert first_output(Mul, (x, y)) is not Derived(
        OperationKey(Mul, [x, y], Linearized([True, False])), 0
    )
    # a live operation key whose slot-0 value key was never made: it is made
    dup = OperationKey(Neg, [Input("fo-z")])
    assert first_output(Neg, (Input("fo-z"),)) is Derived(dup, 0)


def test_first_output_refuses_what_the_constructors_refuse():
    with pytest.raises(GraphBuildError, match=r"expects 2 input\(s\), got 1"):
        first_output(Add, (Input("x"),))
    with pytest.raises(TypeError, match="input 1 must be a ValueKey"):
        first_output(Add, (Input("x"), "y"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be hashable"):
        first_output(Add, (Input("x"), ["y"]))  # type: ignore[arg-type]


def test_input_keys_compare_by_type_and_value():
    assert Input(("a", 1)) is Input(("a", 1))
    assert Input(1) is not Input(True)
    assert Input(True).key is True
    assert Input(1.0) != Input(1)
    assert Input("x") != Input("y")
    assert Input("x") != Derived(OperationKey(Neg, [Input("x")]), 0)


def test_role_is_part_of_identity():
    x, y = Input("x"), Input("y")
    primary = OperationKey(Mul, [x, y], PRIMARY)
    left = OperationKey(Mul, [x, y], Linearized([True, False]))
    right = OperationKey(Mul, [x, y], Linearized([False, True]))
    assert len({primary, left, right}) == 3
    assert len({primary.fingerprint, left.fingerprint, right.fingerprint}) == 3
    assert primary != left
    assert left != right
    assert primary != right


def test_slot_is_part_of_identity():
    dup = OperationKey(Dup, [Input("x")])
    assert Derived(dup, 0) != Derived(dup, 1)
    assert dup.output_keys() == (Derived(dup, 0), Derived(dup, 1))


def test_roles():
    assert Primary() is PRIMARY
    assert Linearized([True, False]) == Linearized((True, False))
    assert Linearized([True]) != Linearized([False])
    assert Linearized([True]) != PRIMARY
    with pytest.raises(TypeError, match="must be bool"):
        Linearized([1, 0])


def test_keys_are_immutable():
    key = Derived(OperationKey(Neg, [Input("x")]), 0)
    with pytest.raises(AttributeError):
        key.output_slot = 1
    with pytest.raises(AttributeError):
        key.operation_key.inputs = ()
    with pytest.raises(AttributeError):
        Input("x").key = "y"
    with pytest.raises(AttributeError):
        Linearized([True]).active_mask = (False,)


def test_copy_and_pickle_preserve_identity():
    key = Derived(OperationKey(Add, [Input("x"), Derived(OperationKey(Neg, [Input("y")]), 0)]), 0)
    assert copy.copy(key) is key
    assert copy.deepcopy(key) is key
    assert pickle.loads(pickle.dumps(key)) is key
    assert pickle.loads(pickle.dumps(Linearized([True, False]))) == Linearized([True, False])


def test_fingerprint_is_structural_and_computed_once():
    shallow = Derived(OperationKey(Neg, [Input("x")]), 0)
    deep = shallow
    for _ in range(1000):
        deep = Derived(OperationKey(Neg, [deep]), 0)
    assert isinstance(deep.fingerprint, int)
    assert deep.fingerprint != shallow.fingerprint
    # Rebuilding the same structure gives the same key, hence the same fingerprint.
    again = shallow
    for _ in range(1000):
        again = Derived(OperationKey(Neg, [again]), 0)
    assert again is deep


def test_derived_rejects_bad_slots():
    neg = OperationKey(Neg, [Input("x")])
    with pytest.raises(GraphBuildError, match=r"output slot 1 out of range for operation Neg"):
        Derived(neg, 1)
    with pytest.raises(GraphBuildError, match="out of range"):
        Derived(neg, -1)
    with pytest.raises(TypeError, match="expected an OperationKey"):
        Derived("not a key", 0)


def test_operation_key_validates_its_parts():
    with pytest.raises(GraphBuildError, match=r"operation Add expects 2 input\(s\), got 1"):
        OperationKey(Add, [Input("x")])
    with pytest.raises(TypeError, match="input 1 must be a ValueKey"):
        OperationKey(Add, [Input("x"), "y"])
    with pytest.raises(GraphBuildError, match="active mask"):
        OperationKey(Add, [Input("x"), Input("y")], Linearized([True]))
    with pytest.raises(TypeError, match="must be hashable"):
        OperationKey(Add, [Input("x"), Input("y")], role=[True])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a GraphOperation"):
        OperationKey(object(), [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be hashable"):
        Input(["unhashable"])


def test_keys_are_freed_when_unused():
    gc.collect()
    before = interned_key_count()
    key = Input("temporary-root")
    for _ in range(10_000):
        key = Derived(OperationKey(Neg, [key]), 0)
    assert interned_key_count() >= before + 10_000
    del key
    gc.collect()
    assert interned_key_count() == before


@pytest.mark.slow
def test_deep_chain_of_keys_is_freed_without_recursion_errors():
    gc.collect()
    before = interned_key_count()
    key = Input("deep-root")
    for _ in range(300_000):
        key = Derived(OperationKey(Neg, [key]), 0)
    del key
    gc.collect()
    assert interned_key_count() == before


def test_interning_is_consistent_across_threads():
    results: list[list[Derived]] = [[] for _ in range(4)]
    barrier = threading.Barrier(4)

    def build(position: int) -> None:
        barrier.wait()
        key = Input("threaded")
        for _ in range(2_000):
            key = Derived(OperationKey(Neg, [key]), 0)
            results[position].append(key)

    threads = [threading.Thread(target=build, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for chain in results[1:]:
        assert all(a is b for a, b in zip(chain, results[0], strict=True))
