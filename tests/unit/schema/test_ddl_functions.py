from __future__ import annotations

import pytest

from tabletdb.cql.errors import AlreadyExists, InvalidRequest
from tabletdb.cql.types import BIGINT, INT, TEXT, ListType, UserTypeRef
from tabletdb.schema.ddl_common import Change, SchemaChangeEvent, Target
from tabletdb.schema.ddl_functions import create_aggregate, create_function, drop_aggregate, drop_function
from tabletdb.schema.ddl_types import create_type, drop_type
from tabletdb.schema.model import Catalog

from .helpers import apply, with_keyspace


def _fn(catalog: Catalog, name: str = "f", types: tuple = (INT,), ret: object = INT, **kw: object):  # type: ignore[type-arg, no-untyped-def]
    names = [f"a{i}" for i in range(len(types))]
    return create_function(catalog, "ks", name, names, list(types), ret, "lua", "return a0", True, **kw)  # type: ignore[arg-type]


def test_function_create_replace_and_overloads() -> None:
    catalog = with_keyspace()
    outcome = _fn(catalog)
    assert outcome.events == (SchemaChangeEvent(Change.CREATED, Target.FUNCTION, "ks", "f", ("int",)),)
    catalog = apply(catalog, outcome)
    with pytest.raises(AlreadyExists, match=r"Function ks\.f\(int\) already exists"):
        _fn(catalog)
    assert _fn(catalog, if_not_exists=True).is_noop
    replaced = _fn(catalog, or_replace=True)
    assert replaced.events[0].change is Change.UPDATED
    with pytest.raises(InvalidRequest, match="not compatible with the return type int"):
        _fn(catalog, ret=TEXT, or_replace=True)
    with pytest.raises(InvalidRequest, match="Cannot use both 'OR REPLACE' and 'IF NOT EXISTS'"):
        _fn(catalog, or_replace=True, if_not_exists=True)
    with pytest.raises(InvalidRequest, match="Language 'java' is not supported"):
        create_function(catalog, "ks", "g", ["a"], [INT], INT, "java", "x", True)
    with pytest.raises(InvalidRequest, match="Duplicate argument names"):
        create_function(catalog, "ks", "g", ["a", "a"], [INT, INT], INT, "lua", "x", True)
    catalog = apply(catalog, _fn(catalog, types=(TEXT,)))
    with pytest.raises(InvalidRequest, match="matches multiple function definitions"):
        drop_function(catalog, "ks", "f")
    dropped = drop_function(catalog, "ks", "f", [TEXT])
    assert dropped.events == (SchemaChangeEvent(Change.DROPPED, Target.FUNCTION, "ks", "f", ("text",)),)
    catalog = apply(catalog, dropped)
    assert list(catalog.keyspaces["ks"].functions) == [("f", ("int",))]
    with pytest.raises(InvalidRequest, match="Cannot drop non existing function 'nope'"):
        drop_function(catalog, "ks", "nope")
    assert drop_function(catalog, "ks", "nope", if_exists=True).is_noop


def test_function_arguments_keep_their_declared_types_and_block_type_drop() -> None:
    """As ScyllaDB: `list<int>` stays `list<int>` (what DESC prints and GRANT ... ON FUNCTION
    names); naming the overload with `frozen<...>` finds it too."""
    catalog = with_keyspace()
    catalog = apply(catalog, create_type(catalog, "ks", "u", [("a", INT)]))
    catalog = apply(catalog, _fn(catalog, types=(ListType(INT), UserTypeRef(None, "u"))))
    assert ("f", ("list<int>", "u")) in catalog.keyspaces["ks"].functions
    frozen = (ListType(INT, True), UserTypeRef(None, "u", True))
    assert not drop_function(catalog, "ks", "f", frozen).is_noop
    with pytest.raises(InvalidRequest, match=r"still used by function ks\.f"):
        drop_type(catalog, "ks", "u")


def test_aggregates() -> None:
    catalog = with_keyspace()
    catalog = apply(catalog, _fn(catalog, "acc", (BIGINT, INT), BIGINT))
    catalog = apply(catalog, _fn(catalog, "fin", (BIGINT,), TEXT))
    with pytest.raises(InvalidRequest, match=r"State function nope\(bigint, int\) does not exist"):
        create_aggregate(catalog, "ks", "agg", [INT], "nope", BIGINT)
    with pytest.raises(InvalidRequest, match=r"Final function nofin\(bigint\) does not exist"):
        create_aggregate(catalog, "ks", "agg", [INT], "acc", BIGINT, "nofin")
    outcome = create_aggregate(catalog, "ks", "agg", [INT], "acc", BIGINT, "fin", "0")
    assert outcome.events == (SchemaChangeEvent(Change.CREATED, Target.AGGREGATE, "ks", "agg", ("int",)),)
    catalog = apply(catalog, outcome)
    agg = catalog.keyspaces["ks"].aggregates[("agg", ("int",))]
    assert agg.return_type == TEXT and agg.initcond == "0"
    with pytest.raises(AlreadyExists):
        create_aggregate(catalog, "ks", "agg", [INT], "acc", BIGINT)
    with pytest.raises(InvalidRequest, match=r"as it is used by user-defined aggregate ks\.agg"):
        drop_function(catalog, "ks", "acc")
    catalog = apply(catalog, drop_aggregate(catalog, "ks", "agg"))
    assert not catalog.keyspaces["ks"].aggregates
    with pytest.raises(InvalidRequest, match="Cannot drop non existing aggregate 'agg'"):
        drop_aggregate(catalog, "ks", "agg")
