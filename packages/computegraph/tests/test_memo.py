"""Key memos: a frontend's per-key dictionary. It is no part of a key's identity, holds
what it is given (weak references stay weak), stays within its bounds and is dropped by
clear_caches() on every kind of key."""

from __future__ import annotations

import gc
import pickle
import weakref

import pytest
from cg_support import ScalarOp

import computegraph
from computegraph import (
    Derived,
    Input,
    OperationKey,
    cache_stats,
    clear_caches,
    memo_put,
    memos,
)
from computegraph import memo as memo_module

Add, Neg = ScalarOp.ADD, ScalarOp.NEG


def test_a_key_has_no_memo_until_one_is_put_and_then_finds_its_entries():
    x = Input("memo-x")
    y = Derived(OperationKey(Neg, [x]), 0)
    assert x.memo is None
    assert y.memo is None
    memo_put(x, "neg", weakref.ref(y))
    memo_put(x, ("add", 1), 42)
    assert x.memo is not None
    assert x.memo["neg"]() is y
    assert x.memo[("add", 1)] == 42
    assert y.memo is None  # only the key written to has a memo


def test_a_memo_is_no_part_of_a_keys_identity():
    x = Input("memo-identity")
    before = (x.fingerprint, hash(x))
    memo_put(x, "token", 1)
    assert Input("memo-identity") is x
    assert (x.fingerprint, hash(x)) == before
    assert pickle.loads(pickle.dumps(x)) is x
    y = Derived(OperationKey(Add, [x, x]), 0)
    memo_put(y, "token", 2)
    assert Derived(OperationKey(Add, [x, x]), 0) is y
    assert pickle.loads(pickle.dumps(y)) is y


def test_weak_entries_keep_no_key_alive():
    x = Input("memo-weak")
    y = Derived(OperationKey(Neg, [x]), 0)
    memo_put(x, "neg", weakref.ref(y))
    probe = weakref.ref(y)
    del y
    gc.collect()
    assert probe() is None  # the memo held it weakly: freed with its last user
    assert x.memo is not None
    assert x.memo["neg"]() is None


def test_a_memo_holds_at_most_memo_entries():
    x = Input("memo-bound")
    for i in range(3 * computegraph.MEMO_ENTRIES):
        memo_put(x, i, i)
        assert x.memo is not None
        assert len(x.memo) <= computegraph.MEMO_ENTRIES
    assert x.memo[3 * computegraph.MEMO_ENTRIES - 1] == 3 * computegraph.MEMO_ENTRIES - 1
    # rewriting a present token never empties the memo
    memo_put(x, 3 * computegraph.MEMO_ENTRIES - 2, "again")
    assert x.memo[3 * computegraph.MEMO_ENTRIES - 1] == 3 * computegraph.MEMO_ENTRIES - 1


def test_clear_caches_drops_the_memos_of_every_kind_of_key():
    x = Input("memo-clear")
    y = Derived(OperationKey(Neg, [x]), 0)
    loose = Input.unique("memo-loose")  # never interned: registered apart
    for key in (x, y, loose):
        memo_put(key, "token", 1)
        assert key.memo == {"token": 1}
    assert cache_stats()["key memos"].size >= 3
    clear_caches()
    for key in (x, y, loose):
        assert key.memo is None
    assert cache_stats()["key memos"].size == 0
    memo_put(y, "token", 2)  # memos are made again after a clear
    assert y.memo == {"token": 2}


def test_a_key_never_interned_has_no_memo_slot_until_one_is_put():
    key = Input.unique("memo-unset")
    with pytest.raises(AttributeError):
        _ = key.memo
    memo_put(key, "token", 3)
    assert key.memo == {"token": 3}
    clear_caches()
    assert key.memo is None


def test_past_memo_keys_memos_every_memo_is_dropped(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(memo_module, "MEMO_KEYS", 4)
    clear_caches()
    keys = [Input(("memo-many", i)) for i in range(10)]
    for key in keys:
        memo_put(key, "token", 1)
        stats = memos.stats()
        assert 0 < stats.size <= stats.maxsize == 4
    assert keys[0].memo is None  # dropped when the fifth memo was made
    assert keys[-1].memo == {"token": 1}
    assert memos.stats().evictions > 0
