"""SHA-512 crypt (`$6$`), written from Ulrich Drepper's public "Unix crypt using SHA-256 and
SHA-512" description.

ScyllaDB stores role passwords in this form, so backups taken from it restore with working
logins only if we produce and verify exactly the same strings. The algorithm deliberately costs
`rounds` SHA-512 computations (5000 by default); callers run it off the event loop.
"""

from __future__ import annotations

import hashlib

PREFIX = "$6$"
ROUNDS_DEFAULT = 5000
ROUNDS_MIN = 1000
ROUNDS_MAX = 999_999_999
SALT_MAX = 16
ALPHABET = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# The final digest is written as 21 groups of three bytes plus one lone byte; group j takes
# bytes (22j, 22j+21, 22j+42) modulo 63, which spreads neighbouring digest bytes apart.
_GROUPS = tuple(((22 * j) % 63, (22 * j + 21) % 63, (22 * j + 42) % 63) for j in range(21))


def _repeat_to(block: bytes, length: int) -> bytes:
    """`block` repeated and cut to `length` bytes (the spec's "sequence" construction)."""
    whole, rest = divmod(length, len(block))
    return block * whole + block[:rest]


def _encode24(b2: int, b1: int, b0: int, chars: int) -> str:
    word = (b2 << 16) | (b1 << 8) | b0
    out = []
    for _ in range(chars):
        out.append(ALPHABET[word & 0x3F])
        word >>= 6
    return "".join(out)


def _encode_digest(digest: bytes) -> str:
    text = "".join(_encode24(digest[a], digest[b], digest[c], 4) for a, b, c in _GROUPS)
    return text + _encode24(0, 0, digest[63], 2)


def _digest(password: bytes, salt: bytes, rounds: int) -> bytes:
    alternate = hashlib.sha512(password + salt + password).digest()
    ctx = hashlib.sha512(password + salt)
    ctx.update(_repeat_to(alternate, len(password)))
    length = len(password)
    while length:
        ctx.update(alternate if length & 1 else password)
        length >>= 1
    a = ctx.digest()

    p_seq = _repeat_to(hashlib.sha512(password * len(password)).digest(), len(password))
    s_seq = _repeat_to(hashlib.sha512(salt * (16 + a[0])).digest(), len(salt))

    current = a
    for i in range(rounds):
        ctx = hashlib.sha512(p_seq if i & 1 else current)
        if i % 3:
            ctx.update(s_seq)
        if i % 7:
            ctx.update(p_seq)
        ctx.update(current if i & 1 else p_seq)
        current = ctx.digest()
    return current


def parse_setting(setting: str) -> tuple[str, int, bool]:
    """(salt, rounds, rounds_written) from `$6$[rounds=N$]salt[$hash]`.

    As the reference does, the salt stops at the next `$` or after 16 characters, and a rounds
    value outside [1000, 999999999] is clamped rather than refused.
    """
    if not setting.startswith(PREFIX):
        raise ValueError(f"not a SHA-512 crypt setting (expected it to start with {PREFIX!r})")
    rest = setting[len(PREFIX) :]
    rounds, rounds_written = ROUNDS_DEFAULT, False
    if rest.startswith("rounds="):
        number, sep, after = rest[len("rounds=") :].partition("$")
        if not sep or not number.isdigit():
            raise ValueError(f"malformed rounds= field in SHA-512 crypt setting {setting[:40]!r}")
        rounds, rounds_written, rest = min(max(int(number), ROUNDS_MIN), ROUNDS_MAX), True, after
    salt = rest.split("$", 1)[0][:SALT_MAX]
    return salt, rounds, rounds_written


def sha512_crypt(password: str, setting: str) -> str:
    """The full crypt string for `password` under `setting` (`$6$salt` or `$6$rounds=N$salt`,
    optionally followed by an old hash, which is ignored — so verifying is `crypt(pw, h) == h`)."""
    salt, rounds, rounds_written = parse_setting(setting)
    digest = _digest(password.encode("utf-8"), salt.encode("utf-8"), rounds)
    head = f"{PREFIX}rounds={rounds}$" if rounds_written else PREFIX
    return f"{head}{salt}${_encode_digest(digest)}"
