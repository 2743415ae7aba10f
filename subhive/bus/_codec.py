"""JSON on the wire, fast: orjson where it can, the standard library where orjson cannot; never a crash.
Encoding and decoding are most of what a validated message costs (4 KB: ~55 us with ``json``, ~4 us with
orjson). Any bytes give a value or a :class:`PayloadError` with a stable code: docs/bus.md, payload codes.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import orjson

__all__ = ["MAX_DEPTH", "MAX_SIZE", "PayloadError", "decode", "depth_over", "encode"]

#: Deepest nesting of arrays and objects a payload may have: orjson's reader refuses deeper documents.
MAX_DEPTH = 1024
#: Largest payload decoded (bytes) unless the caller says otherwise; NATS itself allows at most 64 MiB.
MAX_SIZE = 64 * 1024 * 1024


class PayloadError(ValueError):
    """Bytes that are not an acceptable JSON payload, or a value that cannot be written as one."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode(payload: Any) -> bytes:
    """Compact UTF-8 JSON; raises :class:`PayloadError` for a value that is not JSON."""
    try:
        return orjson.dumps(payload)
    except TypeError:  # an integer past 64 bits, a key that is not a string, or not JSON: the slow path decides
        return _slow_encode(payload)


def _slow_encode(payload: Any) -> bytes:
    try:
        text = _ENCODER.encode(payload)
    except RecursionError:
        raise PayloadError("payload.too_deep", f"the payload nests deeper than {MAX_DEPTH} levels") from None
    except (TypeError, ValueError) as exc:  # a set, bytes, NaN...
        raise PayloadError("payload.malformed", f"the payload is not JSON: {exc}") from None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PayloadError(
            "payload.bad_unicode",
            f"the payload holds a lone surrogate ({exc.object[exc.start]!a}), "
            "which is not Unicode text and cannot be sent as UTF-8",
        ) from None
    if depth_over(data):
        raise PayloadError("payload.too_deep", f"the payload nests deeper than {MAX_DEPTH} levels")
    return data


# Digits become "9", everything else a space: 19 nines in a row mean a number orjson may not read exactly
# (2**63 has 19 digits). A long digit run inside a string only costs the slow path, never a wrong value.
_DIGITS = bytes(0x39 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_NUMBER = b"9" * 19
# Past this size a payload is first sampled, every 4th byte: 19 digits in a row always hold 4 sampled ones in a
# row, so a sample without "9999" rules a long number out at a quarter of the copy (smaller: cheaper whole).
_SAMPLE_FROM = 512
_SAMPLED_RUN = b"9" * 4
# A JSON string (unrolled, so the engine never backtracks): removed before brackets are counted.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {0x5B: 1, 0x7B: 1, 0x5D: -1, 0x7D: -1}
# A surrogate escape: only the slow path can produce a lone one (orjson refuses them), so only it checks.
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def depth_over(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text ``data`` nests arrays/objects deeper than ``limit``; a byte scan, no parsing."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False  # the common case: too few brackets to nest that deep
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if len(brackets) <= limit:
        return False
    return max(itertools.accumulate(_STEP[b] for b in brackets)) > limit


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is beyond the range of a float")
    return value


def decode(data: bytes, *, limit: int = MAX_SIZE) -> Any:
    """The JSON value in ``data``; raises :class:`PayloadError` (a ValueError) saying why it is not one.

    Limits are checked before parsing, so no input reaches a parser that could recurse or blow up. orjson
    (Rust, bounded, refusing more than :data:`MAX_DEPTH` levels by itself) reads the payload or refuses it;
    only payloads with integers beyond 64 bits, which orjson would read as floats (losing digits), take the
    standard library's exact parser, after a scan of the bytes for depth. That parser may stop sooner, near
    Python's recursion limit, with the same ``payload.too_deep`` code. NaN and Infinity are refused either way.
    """
    if len(data) > limit:
        raise PayloadError("payload.too_large", f"the payload is {len(data)} bytes; at most {limit} are read")
    if not _long_number(data):
        try:
            return orjson.loads(data)  # refuses more than MAX_DEPTH levels by itself
        except orjson.JSONDecodeError:
            pass  # the exact parser gives the reason (or reads what orjson would not)
    return _slow_decode(data)


def _long_number(data: bytes) -> bool:
    """Whether ``data`` holds 19 digits in a row (maybe an integer past 64 bits); few payloads are copied whole."""
    if len(data) > _SAMPLE_FROM and _SAMPLED_RUN not in data[::4].translate(_DIGITS):
        return False
    return _LONG_NUMBER in data.translate(_DIGITS)


def _slow_decode(data: bytes) -> Any:
    if depth_over(data):  # before the recursive parser sees it
        raise PayloadError("payload.too_deep", f"the payload nests deeper than {MAX_DEPTH} levels")
    try:
        text = data.decode("utf-8")  # UTF-8 only: json.loads would guess UTF-16/32 from the first bytes
    except UnicodeDecodeError as exc:
        raise PayloadError("payload.bad_unicode", f"the payload is not UTF-8: {exc}") from None
    try:
        value = json.loads(text, parse_constant=_no_constants, parse_float=_finite)
    except RecursionError:  # the depth scan makes this unreachable; kept so no input can escape as a crash
        raise PayloadError("payload.too_deep", f"the payload nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # json's JSONDecodeError, int()'s digit limit, the checks above
        raise PayloadError("payload.malformed", f"the payload is not JSON: {exc}") from None
    if _SURROGATE.search(data):
        try:
            _ENCODER.encode(value).encode("utf-8")
        except UnicodeEncodeError:
            raise PayloadError(
                "payload.bad_unicode",
                "the payload holds a lone surrogate escape (\\ud800 to \\udfff unpaired): not a Unicode scalar value",
            ) from None
    return value
