"""Hypothesis strategies for CQL statements against one fixed schema, for the CQL fuzz test.

Statements are built from the grammar (SELECT, INSERT, UPDATE, DELETE, BATCH, ALTER TABLE ...
WITH) with terms of every kind: literals of every type and of odd sizes and spellings, nested
collections, tuples and UDT literals, casts, function calls (known, unknown, misused), and columns
that exist or not; many are invalid on purpose (type mismatches, wrong operators, restrictions a
table cannot serve). Some are then mutated at the token level (a token dropped, repeated, swapped
or replaced), which yields syntax errors and near-miss statements. Nothing here drops or
truncates: every example runs against the same data.
"""

from __future__ import annotations

import re

from hypothesis import strategies as st

KEYSPACE = "fz"

SCHEMA = [
    f"CREATE KEYSPACE {KEYSPACE} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}",
    f"CREATE TYPE {KEYSPACE}.pt (x int, y text)",
    f"CREATE TABLE {KEYSPACE}.t (k int, c1 int, c2 text, v int, b bigint, d decimal, f double, n varint,"
    " ts timestamp, u uuid, tu timeuuid, bl blob, bo boolean, s set<int>, l list<text>, m map<int, text>,"
    " tp frozen<tuple<int, text>>, p frozen<pt>, PRIMARY KEY (k, c1, c2))",
    f"CREATE TABLE {KEYSPACE}.fk (k frozen<set<int>>, c frozen<map<int, text>>, v int, PRIMARY KEY (k, c))",
    f"CREATE TABLE {KEYSPACE}.cnt (k int PRIMARY KEY, n counter)",
    f"INSERT INTO {KEYSPACE}.t (k, c1, c2, v, d, s, m) VALUES (1, 1, 'a', 1, 1.5, {{1, 2}}, {{1: 'x'}})",
    f"INSERT INTO {KEYSPACE}.t (k, c1, c2, v, b, n) VALUES (1, 2, 'b', 2, 20, 1234567890123456789012345)",
    f"INSERT INTO {KEYSPACE}.t (k, c1, c2) VALUES (2, 1, 'a')",
    f"INSERT INTO {KEYSPACE}.fk (k, c, v) VALUES ({{1, 2}}, {{1: 'a'}}, 1)",
    # user functions (the fuzz node has ScyllaDB's UDF switches on): one overloaded, one taking
    # null, one that fails, an aggregate; called wherever FUNCTIONS are
    f"CREATE FUNCTION {KEYSPACE}.inc(a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua "
    "AS 'return a + 1'",
    f"CREATE FUNCTION {KEYSPACE}.inc(a bigint) RETURNS NULL ON NULL INPUT RETURNS bigint LANGUAGE lua "
    "AS 'return a + 1'",
    f"CREATE FUNCTION {KEYSPACE}.named(a int) CALLED ON NULL INPUT RETURNS text LANGUAGE lua "
    "AS 'return tostring(a)'",
    f"CREATE FUNCTION {KEYSPACE}.fails(a text) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua "
    "AS 'return a + 0'",
    f"CREATE FUNCTION {KEYSPACE}.acc(s int, a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua "
    "AS 'return s + a'",
    f"CREATE AGGREGATE {KEYSPACE}.total(int) SFUNC acc STYPE int INITCOND 0",
]

TABLES = {
    "t": [
        "k",
        "c1",
        "c2",
        "v",
        "b",
        "d",
        "f",
        "n",
        "ts",
        "u",
        "tu",
        "bl",
        "bo",
        "s",
        "l",
        "m",
        "tp",
        "p",
    ],
    "fk": ["k", "c", "v"],
    "cnt": ["k", "n"],
}
OTHER_NAMES = ["nosuch", '"K"', '"weird name"', "token", "ttl", "writetime", "system"]

FUNCTIONS = [
    "now",
    "uuid",
    "currentTimestamp",
    "currentDate",
    "currentTime",
    "currentTimeUUID",
    "toTimestamp",
    "toDate",
    "toUnixTimestamp",
    "dateOf",
    "unixTimestampOf",
    "minTimeuuid",
    "maxTimeuuid",
    "intAsBlob",
    "blobAsInt",
    "textAsBlob",
    "blobAsText",
    "bigintAsBlob",
    "blobAsBigint",
    "token",
    "writetime",
    "ttl",
    "count",
    "min",
    "max",
    "sum",
    "avg",
    "toJson",
    "fromJson",
    "nosuchfunction",
    "system.now",
    "fz.nosuch",
    "inc",
    "fz.inc",
    "named",
    "fails",
    "total",
    "other.inc",
]

TYPES = [
    "int",
    "bigint",
    "text",
    "ascii",
    "varint",
    "decimal",
    "double",
    "float",
    "blob",
    "boolean",
    "timestamp",
    "date",
    "time",
    "uuid",
    "timeuuid",
    "inet",
    "duration",
    "smallint",
    "tinyint",
    "list<int>",
    "set<text>",
    "map<int, text>",
    "frozen<list<int>>",
    "tuple<int, text>",
    "frozen<pt>",
    "nosuchtype",
    "vector<float, 2>",
    "counter",
]

OPERATORS = ["=", "!=", "<", "<=", ">", ">=", "IN", "CONTAINS", "CONTAINS KEY", "LIKE"]

TABLE_OPTIONS = {
    "speculative_retry": ["'99PERCENTILE'", "'50ms'", "'nanms'", "'infms'", "'-1ms'", "'NONE'", "'x'", "1"],
    "gc_grace_seconds": ["0", "-1", "864000", "1e10", "'x'", "99999999999999999999"],
    "default_time_to_live": ["0", "-5", "2147483647", "2147483648", "1.5"],
    "comment": ["'c'", "''", "null", "1"],
    "caching": ["{'keys': 'ALL', 'rows_per_partition': 'NONE'}", "{'keys': 'x'}", "{}", "'x'"],
    "compaction": ["{'class': 'SizeTieredCompactionStrategy'}", "{'class': 'Nope'}", "{}", "{'x': 1}"],
    "compression": ["{'sstable_compression': ''}", "{'chunk_length_in_kb': 'x'}", "{}"],
    "bloom_filter_fp_chance": ["0.01", "0", "1.5", "-1", "NaN"],
    "nosuch": ["1"],
}


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


INTEGERS = st.one_of(
    st.integers(-3, 3),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**31 - 1, 2**31, -(2**63), 2**63, 10**40, -(10**40)]),
).map(str)
FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(
        [
            "NaN",
            "Infinity",
            "-Infinity",
            "1e1000000000",
            "1e-1000000000",
            "-0.0",
            "1.5e308",
            "3.14159265358979323846264338327950288419716939937510",
            "1E+400",
            "0.000",
        ]
    ),
)
STRINGS = st.one_of(
    st.text(max_size=12).map(_quoted),
    st.sampled_from(
        [
            "'2020-01-01'",
            "'2020-01-01 10:00:00+0000'",
            "'10:00:00.123456789'",
            "'1h30m'",
            "'127.0.0.1'",
            "'::1'",
            "'x'",
            "''",
            "'-1'",
            "'99999999999999999999999'",
            "'2020-13-45'",
            "'00000000-0000-1000-8000-000000000000'",
            "'NaN'",
            "'true'",
        ]
    ),
    st.integers(0, 300).map(lambda n: _quoted("z" * n)),
)
OTHER_LITERALS = st.sampled_from(
    [
        "true",
        "false",
        "null",
        "0x",
        "0xcafe",
        "0xABC",
        "00000000-0000-1000-8000-000000000000",
        "f47ac10b-58cc-4372-a567-0e02b2c3d479",
        "1h30m",
        "P1D",
        "-5us",
        "?",
        ":name",
        "{}",
        "[]",
        "()",
    ]
)
LITERALS = st.one_of(INTEGERS, FLOATS, STRINGS, OTHER_LITERALS)


def _columns(table: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(TABLES[table]), st.sampled_from(TABLES[table]), st.sampled_from(OTHER_NAMES)
    )


def _terms(table: str) -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        items = st.lists(inner, max_size=4).map(", ".join)
        return st.one_of(
            items.map(lambda s: f"[{s}]"),
            items.map(lambda s: f"{{{s}}}"),
            items.map(lambda s: f"({s})"),
            st.lists(st.tuples(inner, inner), max_size=3).map(
                lambda ps: "{" + ", ".join(f"{k}: {v}" for k, v in ps) + "}"
            ),
            st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), inner), max_size=3).map(
                lambda ps: "{" + ", ".join(f"{k}: {v}" for k, v in ps) + "}"
            ),
            st.tuples(
                st.sampled_from(FUNCTIONS), st.lists(st.one_of(inner, _columns(table)), max_size=3)
            ).map(lambda fa: f"{fa[0]}({', '.join(fa[1])})"),
            st.tuples(st.sampled_from(TYPES), inner).map(lambda ti: f"({ti[0]}) {ti[1]}"),
        )

    return st.recursive(LITERALS, extend, max_leaves=8)


def _relation(table: str) -> st.SearchStrategy[str]:
    column, term = _columns(table), _terms(table)
    return st.one_of(
        st.tuples(column, st.sampled_from(OPERATORS), term).map(" ".join),
        st.tuples(column, st.lists(term, max_size=4)).map(lambda ct: f"{ct[0]} IN ({', '.join(ct[1])})"),
        st.tuples(
            st.lists(column, min_size=1, max_size=3),
            st.sampled_from([*OPERATORS[:6], "IN"]),
            st.lists(term, min_size=1, max_size=3),
        ).map(lambda c: f"({', '.join(c[0])}) {c[1]} ({', '.join(c[2])})"),
        st.tuples(st.sampled_from(OPERATORS[:6]), term).map(lambda ot: f"token(k) {ot[0]} {ot[1]}"),
        st.tuples(column, term, st.sampled_from(OPERATORS[:6]), term).map(
            lambda c: f"{c[0]}[{c[1]}] {c[2]} {c[3]}"
        ),
        column.map(lambda c: f"{c} IS NOT NULL"),
        st.tuples(st.sampled_from(["k", "c1"]), st.sampled_from(OPERATORS[:6]), INTEGERS).map(" ".join),
    )


def _where(table: str, min_size: int = 0) -> st.SearchStrategy[str]:
    return st.lists(_relation(table), min_size=min_size, max_size=4).map(
        lambda rs: f" WHERE {' AND '.join(rs)}" if rs else ""
    )


def _selector(table: str) -> st.SearchStrategy[str]:
    column, term = _columns(table), _terms(table)
    plain = st.one_of(
        column,
        st.just("count(*)"),
        st.tuples(st.sampled_from(FUNCTIONS), st.lists(st.one_of(column, term), max_size=2)).map(
            lambda fa: f"{fa[0]}({', '.join(fa[1])})"
        ),
        st.tuples(column, st.sampled_from(TYPES)).map(lambda ct: f"cast({ct[0]} AS {ct[1]})"),
        st.tuples(column, term).map(lambda ct: f"{ct[0]}[{ct[1]}]"),
        st.tuples(column, term, term).map(lambda ctt: f"{ctt[0]}[{ctt[1]}..{ctt[2]}]"),
        st.tuples(column, st.sampled_from(["x", "y", "z"])).map(".".join),
        # writetime/ttl of elements and fields; functions of aggregates
        st.tuples(st.sampled_from(["writetime", "ttl"]), column, term).map(
            lambda fct: f"{fct[0]}({fct[1]}[{fct[2]}])"
        ),
        st.tuples(st.sampled_from(["writetime", "ttl"]), column, st.sampled_from(["x", "y"])).map(
            lambda fcf: f"{fcf[0]}({fcf[1]}.{fcf[2]})"
        ),
        st.tuples(
            st.sampled_from(FUNCTIONS),
            st.sampled_from(["count", "min", "max", "sum", "avg", "total"]),
            column,
        ).map(lambda fac: f"{fac[0]}({fac[1]}({fac[2]}))"),
        st.tuples(st.sampled_from(["count(*)", "max(v)", "total(v)"]), st.sampled_from(TYPES)).map(
            lambda at: f"cast({at[0]} AS {at[1]})"
        ),
        term,
    )
    return st.one_of(plain, st.tuples(plain, st.sampled_from(["a", "b", '"A"'])).map(" AS ".join))


@st.composite
def _select(draw: st.DrawFn) -> str:
    table = draw(st.sampled_from(list(TABLES)))
    star = draw(st.booleans())
    selectors = "*" if star else ", ".join(draw(st.lists(_selector(table), min_size=1, max_size=4)))
    head = draw(st.sampled_from(["SELECT ", "SELECT ", "SELECT JSON ", "SELECT DISTINCT "]))
    text = f"{head}{selectors} FROM {KEYSPACE}.{table}{draw(_where(table))}"
    if draw(st.integers(0, 4)) == 0:
        text += f" GROUP BY {', '.join(draw(st.lists(_columns(table), min_size=1, max_size=2)))}"
    if draw(st.integers(0, 4)) == 0:
        text += f" ORDER BY {draw(_columns(table))} {draw(st.sampled_from(['ASC', 'DESC', '']))}"
    if draw(st.integers(0, 5)) == 0:
        text += f" PER PARTITION LIMIT {draw(_terms(table))}"
    if draw(st.integers(0, 3)) == 0:
        text += f" LIMIT {draw(st.one_of(INTEGERS, _terms(table)))}"
    if draw(st.booleans()):
        text += " ALLOW FILTERING"
    return text


def _using(table: str) -> st.SearchStrategy[str]:
    option = st.tuples(st.sampled_from(["TTL", "TIMESTAMP", "TIMEOUT"]), st.one_of(INTEGERS, _terms(table)))
    return st.lists(option.map(" ".join), max_size=2).map(
        lambda os: f" USING {' AND '.join(os)}" if os else ""
    )


def _conditions(table: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.just(""),
        st.just(" IF EXISTS"),
        st.lists(_relation(table), min_size=1, max_size=2).map(lambda rs: " IF " + " AND ".join(rs)),
    )


@st.composite
def _insert(draw: st.DrawFn) -> str:
    table = draw(st.sampled_from(list(TABLES)))
    if draw(st.integers(0, 4)) == 0:
        default = draw(st.sampled_from(["", " DEFAULT UNSET", " DEFAULT NULL"]))
        return f"INSERT INTO {KEYSPACE}.{table} JSON {draw(STRINGS)}{default}"
    columns = draw(st.lists(_columns(table), min_size=1, max_size=5))
    if draw(st.integers(0, 2)):
        columns = TABLES[table][:2] + columns
    values = draw(st.lists(_terms(table), min_size=len(columns) - 1, max_size=len(columns) + 1))
    ine = draw(st.sampled_from(["", "", " IF NOT EXISTS"]))
    target = f"{KEYSPACE}.{table} ({', '.join(columns)})"
    return f"INSERT INTO {target} VALUES ({', '.join(values)}){ine}{draw(_using(table))}"


@st.composite
def _update(draw: st.DrawFn) -> str:
    table = draw(st.sampled_from(list(TABLES)))
    column, term = _columns(table), _terms(table)
    assignment = st.one_of(
        st.tuples(column, term).map(" = ".join),
        st.tuples(column, column, st.sampled_from(["+", "-"]), term).map(
            lambda a: f"{a[0]} = {a[1]} {a[2]} {a[3]}"
        ),
        st.tuples(column, term, term).map(lambda a: f"{a[0]}[{a[1]}] = {a[2]}"),
        st.tuples(column, st.sampled_from(["x", "y"]), term).map(lambda a: f"{a[0]}.{a[1]} = {a[2]}"),
    )
    sets = ", ".join(draw(st.lists(assignment, min_size=1, max_size=3)))
    where = draw(_where(table, min_size=1))
    return f"UPDATE {KEYSPACE}.{table}{draw(_using(table))} SET {sets}{where}{draw(_conditions(table))}"


@st.composite
def _delete(draw: st.DrawFn) -> str:
    table = draw(st.sampled_from(list(TABLES)))
    targets = draw(
        st.lists(
            st.one_of(
                _columns(table), st.tuples(_columns(table), _terms(table)).map(lambda ct: f"{ct[0]}[{ct[1]}]")
            ),
            max_size=2,
        )
    )
    where = draw(_where(table, min_size=1))
    using, conditions = draw(_using(table)), draw(_conditions(table))
    return f"DELETE {', '.join(targets)} FROM {KEYSPACE}.{table}{using}{where}{conditions}"


@st.composite
def _batch(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["", "UNLOGGED ", "COUNTER ", "LOGGED "]))
    body = draw(st.lists(st.one_of(_insert(), _update(), _delete()), min_size=1, max_size=3))
    return f"BEGIN {kind}BATCH {'; '.join(body)}; APPLY BATCH"


@st.composite
def _alter(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(sorted(TABLE_OPTIONS)))
    return f"ALTER TABLE {KEYSPACE}.t WITH {name} = {draw(st.sampled_from(TABLE_OPTIONS[name]))}"


_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|[A-Za-z_][A-Za-z0-9_.]*|[0-9][0-9A-Za-z.+-]*|\S")
VOCABULARY = [
    "SELECT",
    "FROM",
    "WHERE",
    "AND",
    "IN",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ";",
    "=",
    "<",
    ">",
    "?",
    "*",
    ".",
    "-",
    "+",
    "null",
    "IF",
    "EXISTS",
    "NOT",
    "SET",
    "VALUES",
    "LIMIT",
    "TOKEN",
    "AS",
    "CAST",
    "JSON",
    "DISTINCT",
    "USING",
    "TTL",
    "1",
    "'x'",
    "k",
    "v",
    "m",
    "CONTAINS",
    "KEY",
    "..",
]


@st.composite
def _mutated(draw: st.DrawFn, inner: st.SearchStrategy[str]) -> str:
    tokens = _TOKEN.findall(draw(inner))
    for _ in range(draw(st.integers(1, 3))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        action = draw(st.sampled_from(["drop", "repeat", "swap", "replace", "insert"]))
        if action == "drop":
            del tokens[i]
        elif action == "repeat":
            tokens.insert(i, tokens[i])
        elif action == "swap" and i + 1 < len(tokens):
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
        elif action == "replace":
            tokens[i] = draw(st.sampled_from(VOCABULARY))
        else:
            tokens.insert(i, draw(st.sampled_from(VOCABULARY)))
    return " ".join(tokens)


def statements() -> st.SearchStrategy[str]:
    """Statements of every kind, valid or not, some mutated at the token level."""
    built = st.one_of(_select(), _select(), _insert(), _update(), _delete(), _batch(), _alter())
    return st.one_of(built, built, _mutated(built))
