from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.schema.frozenmap import FrozenMap


class Collide:
    """Keys with equal hashes exercise the collision buckets below the last trie level."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __hash__(self) -> int:
        return 42

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Collide) and other.n == self.n

    def __repr__(self) -> str:
        return f"Collide({self.n})"


ops = st.lists(st.tuples(st.booleans(), st.integers(-50, 50), st.integers()), max_size=200)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_behaves_like_a_dict_and_old_versions_stay_intact(operations: list[tuple[bool, int, int]]) -> None:
    model: dict[object, int] = {}
    fmap: FrozenMap[object, int] = FrozenMap()
    history = []
    for is_set, raw_key, value in operations:
        key: object = Collide(raw_key % 7) if raw_key % 3 == 0 else raw_key
        if is_set:
            model[key] = value
            fmap = fmap.set(key, value)
        else:
            model.pop(key, None)
            fmap = fmap.remove(key)
        history.append((dict(model), fmap))
        assert len(fmap) == len(model)
    for snapshot, version in history:
        assert dict(version.items()) == snapshot
        assert all(k in version and version[k] == v for k, v in snapshot.items())
    assert fmap == FrozenMap(model) and hash(fmap) == hash(FrozenMap(model))


def test_equality_ignores_insertion_order_and_missing_keys_raise() -> None:
    a = FrozenMap([("x", 1), ("y", 2)])
    b = FrozenMap({"y": 2}).set("x", 1)
    assert a == b and a != b.set("x", 3) and a.remove("nope") is a
    assert a.get("z") is None and "z" not in a
    with pytest.raises(KeyError, match="z"):
        a["z"]


def test_large_map_updates_share_structure() -> None:
    big = FrozenMap((f"t{i}", i) for i in range(5000))
    bigger = big.set("new", -1)
    assert len(big) == 5000 and len(bigger) == 5001 and "new" not in big
    assert sum(1 for a, b in zip(big._root, bigger._root) if a is b) >= 31


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-300, 300), max_size=60), ops)
def test_keys_missing_from_matches_a_set_difference(
    base_keys: list[int], operations: list[tuple[bool, int, int]]
) -> None:
    """Between a map and one derived from it (shared structure) and between unrelated maps."""
    old: FrozenMap[object, int] = FrozenMap((k if k % 3 else Collide(k % 7), k) for k in base_keys)
    new = old
    for is_set, raw_key, value in operations:
        key: object = Collide(raw_key % 7) if raw_key % 3 == 0 else raw_key
        new = new.set(key, value) if is_set else new.remove(key)
    assert set(old.keys_missing_from(new)) == set(old) - set(new)
    assert set(new.keys_missing_from(old)) == set(new) - set(old)
    rebuilt: FrozenMap[object, int] = FrozenMap(dict(new.items()))
    assert set(old.keys_missing_from(rebuilt)) == set(old) - set(new)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-300, 300), max_size=60), ops)
def test_items_missing_from_names_removed_and_replaced_values(
    base_keys: list[int], operations: list[tuple[bool, int, int]]
) -> None:
    old: FrozenMap[object, object] = FrozenMap((k if k % 3 else Collide(k % 7), [k]) for k in base_keys)
    new = old
    for is_set, raw_key, value in operations:
        key: object = Collide(raw_key % 7) if raw_key % 3 == 0 else raw_key
        new = new.set(key, [value]) if is_set else new.remove(key)
    gone = old.items_missing_from(new)
    expected = [(k, v) for k, v in old.items() if k not in new or new[k] is not v]
    assert sorted(map(repr, gone)) == sorted(map(repr, expected))
    assert all(v is old[k] for k, v in gone)
