"""How much each hive's dead-letter stream may hold: ``[dead_letters]`` in hive.toml, overridden per hive in
subhive.toml. See docs/bus.md#dead-letters and docs/decisions/0023-dead-letter-limits.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._source import join_pointer
from ._checks import unknown_keys

__all__ = ["DEAD_LETTER_KEYS", "DEFAULT_DEAD_LETTER_LIMITS", "DeadLetterLimits", "format_age", "format_size"]

DEAD_LETTER_KEYS = ("max_bytes", "max_age")
#: Below this a single refused message (up to 1 MiB by default) may not fit; tests use a few KiB.
MIN_BYTES = 1024
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*\Z", re.IGNORECASE)
_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd])?\s*\Z")
_SIZE_UNITS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SIZE_HINT = 'a number of bytes or a size such as "64MiB", "500KB", "1GiB"'
_AGE_HINT = 'seconds or a duration such as "90s", "30m", "12h", "7d"; 0 keeps letters until the size limit'

#: (pointer, code, message, hint): how a reader records one problem.
Report = Callable[[str, str, str, str], None]


@dataclass(frozen=True, slots=True)
class DeadLetterLimits:
    """``max_bytes`` a hive's dead letters may take on disk, ``max_age`` in seconds (0: no age limit).

    None means "not set here": :meth:`over` fills it from the level below.
    """

    max_bytes: int | None = None
    max_age: float | None = None

    def __post_init__(self) -> None:
        if self.max_bytes is not None and (
            isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int) or self.max_bytes < MIN_BYTES
        ):
            raise ValueError(f"max_bytes must be an integer of at least {MIN_BYTES}, not {self.max_bytes!r}")
        if self.max_age is not None and (
            isinstance(self.max_age, bool)
            or not isinstance(self.max_age, int | float)
            or not math.isfinite(self.max_age)
            or 0 < self.max_age < 1
            or self.max_age < 0
        ):
            raise ValueError(f"max_age must be 0 or at least 1 second, not {self.max_age!r}")
        if self.max_age is not None:
            object.__setattr__(self, "max_age", float(self.max_age))

    @property
    def is_set(self) -> bool:
        return self.max_bytes is not None or self.max_age is not None

    def over(self, base: DeadLetterLimits) -> DeadLetterLimits:
        """These limits, with what they leave unset taken from ``base``.

        >>> DeadLetterLimits(max_age=60).over(DEFAULT_DEAD_LETTER_LIMITS).max_bytes == 64 * 1024 * 1024
        True
        """
        return DeadLetterLimits(
            self.max_bytes if self.max_bytes is not None else base.max_bytes,
            self.max_age if self.max_age is not None else base.max_age,
        )

    def to_toml(self) -> str:
        """The ``[dead_letters]`` table (empty when nothing is set)."""
        if not self.is_set:
            return ""
        lines = ["[dead_letters]"]
        if self.max_bytes is not None:
            lines.append(f'max_bytes = "{format_size(self.max_bytes)}"')
        if self.max_age is not None:
            lines.append(f'max_age = "{format_age(self.max_age)}"')
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, table: Mapping[str, Any]) -> DeadLetterLimits:
        """Limits from a ``[dead_letters]`` table; raises ValueError naming the first bad key.

        >>> DeadLetterLimits.parse({"max_bytes": "64MiB", "max_age": "7d"})
        DeadLetterLimits(max_bytes=67108864, max_age=604800.0)
        """
        problems: list[str] = []
        limits = cls.read(table, "", lambda pointer, _code, message, hint: problems.append(f"{message} ({hint})"))
        if problems:
            raise ValueError(problems[0])
        return limits

    @classmethod
    def read(cls, table: Mapping[str, Any], pointer: str, report: Report) -> DeadLetterLimits:
        """Limits from a ``[dead_letters]`` table at ``pointer``, each problem passed to ``report`` (the
        codes are ``deadletters.*``); what is wrong is left unset."""
        unknown_keys(table, pointer, DEAD_LETTER_KEYS, "deadletters.unknown_key", report)
        max_bytes = _size(table["max_bytes"]) if "max_bytes" in table else None
        if "max_bytes" in table and max_bytes is None:
            report(
                join_pointer(pointer, "max_bytes"),
                "deadletters.size_invalid",
                f"max_bytes {table['max_bytes']!r} is not a size of at least {MIN_BYTES} bytes",
                _SIZE_HINT,
            )
        max_age = _age(table["max_age"]) if "max_age" in table else None
        if "max_age" in table and max_age is None:
            report(
                join_pointer(pointer, "max_age"),
                "deadletters.age_invalid",
                f"max_age {table['max_age']!r} is not 0 or a duration of at least 1 second",
                _AGE_HINT,
            )
        return cls(max_bytes, max_age)


#: What a hive gets when neither hive.toml nor its subhive.toml says otherwise.
DEFAULT_DEAD_LETTER_LIMITS = DeadLetterLimits(max_bytes=64 * 1024 * 1024, max_age=7 * 86400.0)


def _size(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = float(value)
    elif isinstance(value, str) and (found := _SIZE.match(value)):
        number = float(found.group(1)) * _SIZE_UNITS[(found.group(2) or "b").lower()]
    else:
        return None
    if not math.isfinite(number) or number < MIN_BYTES or number > 2**62:
        return None
    return int(number)


def _age(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str) and (found := _AGE.match(value)):
        number = float(found.group(1)) * _AGE_UNITS[found.group(2) or "s"]
    else:
        return None
    if not math.isfinite(number) or number < 0 or 0 < number < 1 or number > 100 * 365 * 86400:
        return None
    return number


def format_size(n: int) -> str:
    """``format_size(64 * 1024 * 1024)`` is '64MiB'; sizes that are no whole unit are plain bytes ('1500B')."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B"


def format_age(seconds: float) -> str:
    """``format_age(604800)`` is '7d'; 0 is '0s' (no age limit)."""
    for unit, factor in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= factor and seconds % factor == 0:
            return f"{int(seconds // factor)}{unit}"
    return f"{int(seconds)}s" if seconds == int(seconds) else f"{seconds!r}s"
