"""SHA-512 crypt against the published vectors and Python's crypt module; bcrypt verification."""

from __future__ import annotations

import warnings

import bcrypt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.auth.passwords import hash_password, is_supported_hash, verify_password
from tabletdb.auth.sha512_crypt import ALPHABET, parse_setting, sha512_crypt

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import crypt as system_crypt
    except ImportError:  # removed in Python 3.13
        system_crypt = None  # type: ignore[assignment]

# Test vectors from Drepper's "Unix crypt using SHA-256 and SHA-512" (SHA-512 part).
VECTORS = [
    (
        "$6$saltstring",
        "Hello world!",
        "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1",
    ),
    (
        "$6$rounds=10000$saltstringsaltstring",
        "Hello world!",
        "$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v.",
    ),
    (
        "$6$rounds=5000$toolongsaltstring",
        "This is just a test",
        "$6$rounds=5000$toolongsaltstrin$lQ8jolhgVRVhY4b5pZKaysCLi0QBxGoNeKQzQ3glMhwllF7oGDZxUhx1yxdYcz/e1JSbq3y6JMxxl8audkUEm0",
    ),
    (
        "$6$rounds=1400$anotherlongsaltstring",
        "a very much longer text to encrypt.  This one even stretches over morethan one line.",
        "$6$rounds=1400$anotherlongsalts$POfYwTEok97VWcjxIiSOjiykti.o/pQs.wPvMxQ6Fm7I6IoYN3CmLs66x9t0oSwbtEW7o7UmJEiDwGqd8p4ur1",
    ),
    (
        "$6$rounds=10$roundstoolow",
        "the minimum number is still observed",
        "$6$rounds=1000$roundstoolow$kUMsbe306n21p9R.FRkW3IGn.S9NPN0x50YhH1xhLsPuWGsUSklZt58jaTfF4ZEQpyUNGc0dqbpBYYBaHHrsX.",
    ),
]


@pytest.mark.parametrize(("setting", "password", "expected"), VECTORS)
def test_published_vectors(setting: str, password: str, expected: str) -> None:
    assert sha512_crypt(password, setting) == expected
    assert verify_password(password, expected)
    assert not verify_password(password + "x", expected)


def test_setting_parsing() -> None:
    assert parse_setting("$6$abc$rest") == ("abc", 5000, False)
    assert parse_setting("$6$rounds=2000$abc") == ("abc", 2000, True)
    assert parse_setting("$6$rounds=9999999999$s") == ("s", 999_999_999, True)
    with pytest.raises(ValueError, match="SHA-512"):
        parse_setting("$5$abc")
    with pytest.raises(ValueError, match="rounds"):
        parse_setting("$6$rounds=x$abc")


@pytest.mark.skipif(system_crypt is None, reason="Python's crypt module is not available")
@settings(max_examples=25, deadline=None)
@given(
    password=st.text(min_size=0, max_size=40).filter(lambda s: "\x00" not in s),
    salt=st.text(alphabet=ALPHABET, min_size=1, max_size=20),
    rounds=st.sampled_from([None, 1000, 1234]),
)
def test_matches_system_crypt(password: str, salt: str, rounds: int | None) -> None:
    setting = f"$6${salt}" if rounds is None else f"$6$rounds={rounds}${salt}"
    assert system_crypt is not None
    assert sha512_crypt(password, setting) == system_crypt.crypt(password, setting)


def test_hash_password_is_salted_and_verifies() -> None:
    first, second = hash_password("secret"), hash_password("secret")
    assert first.startswith("$6$") and first != second
    assert verify_password("secret", first) and verify_password("secret", second)
    assert not verify_password("Secret", first)
    assert hash_password("pw", "abc") == sha512_crypt("pw", "$6$abc")
    with pytest.raises(ValueError, match="salt"):
        hash_password("pw", "a$b")


def test_bcrypt_hashes_from_cassandra_verify() -> None:
    hashed = bcrypt.hashpw(b"cassandra", bcrypt.gensalt(4)).decode()
    for prefix in ("$2a$", "$2b$"):
        variant = prefix + hashed[4:]
        assert is_supported_hash(variant)
        assert verify_password("cassandra", variant)
        assert not verify_password("cassandrA", variant)


def test_bcrypt_looks_at_72_bytes_only() -> None:
    long = "x" * 80
    hashed = bcrypt.hashpw(long.encode()[:72], bcrypt.gensalt(4)).decode()
    assert verify_password(long, hashed)
    assert verify_password("x" * 72 + "different tail", hashed)


def test_unknown_or_broken_hashes_never_match() -> None:
    assert not verify_password("x", "plain")
    assert not verify_password("x", "$1$abc$def")
    assert not verify_password("x", "$2a$04$garbage")
    assert not verify_password("x", "$6$rounds=zz$abc$def")
    assert not is_supported_hash("$1$abc")


def test_login_of_an_unknown_role_checks_a_dummy_hash_of_the_same_scheme() -> None:
    from tabletdb.auth.login import authenticate
    from tabletdb.auth.model import AuthState, Role
    from tabletdb.cql.errors import BadCredentials
    from tabletdb.schema.frozenmap import FrozenMap

    checked: list[str] = []

    def counting(password: str, salted_hash: str) -> bool:
        checked.append(salted_hash)
        return verify_password(password, salted_hash)

    known = Role("known", can_login=True, salted_hash=hash_password("secret", "somesalt"))
    state = AuthState(roles=FrozenMap({"known": known}))
    assert authenticate(state, "known", "secret", counting) == "known"
    for user in ("known", "ghost"):
        with pytest.raises(BadCredentials, match=r"^Username and/or password are incorrect$"):
            authenticate(state, user, "guess", counting)
    assert len(checked) == 3 and all(h.startswith("$6$") and h.count("$") == 3 for h in checked)
    assert checked[2] != known.salted_hash
