"""Frozen dataclasses read from and written to JSON by their declared field types: one reader, one writer.

A record class declares its fields with plain annotations (str, int, float, bool, None unions, Literal, tuples,
Mapping[str, X] tables, nested records); `decode(cls, value, where)` builds it from parsed JSON, checking every field
against its type, and `encode(record)` gives the JSON back. An error names where the value is ("run.json rows[3]
(gate/ptx/tiny/balanced).timing.modelled_us"), the type found and the type expected. Fields with a default may be
absent; a field the class does not declare is an error (a misspelt field is not silently dropped).

NOTE: `JsonTable` is for data that is a table of names (counter name -> value, opcode -> count, the timing settings
as recorded): what those names are is data, not code, so they are not fields.
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Literal, Union, get_args, get_origin, get_type_hints

from harness.errors import PtxmoeError

JsonScalar = Union[None, bool, int, float, str]
JsonValue = Union[JsonScalar, tuple["JsonValue", ...], Mapping[str, "JsonValue"]]
JsonTable = Mapping[str, JsonValue]


def _is_json_value(tp) -> bool:
    """Whether `tp` is JsonValue (also as typing leaves it inside another type, with its forward references)."""
    return tp == JsonValue or any(isinstance(a, typing.ForwardRef) and a.__forward_arg__ == "JsonValue"
                                  for arm in get_args(tp) for a in get_args(arm))


class RecordError(PtxmoeError):
    """A JSON value that does not have the type its record field declares (the message names where and what)."""


_NAMES = {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number",
          bool: "true/false", type(None): "null"}


def json_type(value) -> str:
    """The JSON type of a parsed value, as a message says it ("an object", "a string", "null")."""
    return _NAMES.get(type(value), type(value).__name__)


def _expected(tp) -> str:
    origin = get_origin(tp)
    if tp is type(None):
        return "null"
    if tp is bool:
        return "true/false"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if _is_json_value(tp):
        return "any JSON value"
    if origin is Literal:
        return " or ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_expected(a) for a in get_args(tp))
    if origin is tuple:
        return f"an array of {_expected(get_args(tp)[0])}"
    if origin in (Mapping, dict, typing.Mapping):
        return f"an object of {_expected(get_args(tp)[1])}"
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return f"an object ({tp.__name__})"
    return str(tp)


_HINTS: dict[type, dict] = {}


def _hints(cls) -> dict:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls, include_extras=False)
    return _HINTS[cls]


def _bad(where: str, value, tp) -> RecordError:
    shown = f" ({value!r})" if isinstance(value, (str, int, float)) and len(repr(value)) < 60 else ""
    return RecordError(f"{where} is {json_type(value)}{shown}; expected {_expected(tp)}")


def _json_value(value, where: str):
    """Any JSON value, arrays as tuples (records stay immutable)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, list):
        return tuple(_json_value(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, dict):
        return {str(k): _json_value(v, f"{where}.{k}") for k, v in value.items()}
    raise _bad(where, value, JsonValue)


def _tags_fit(cls, value: dict) -> bool:
    """Whether the object's values of `cls`'s Literal fields (its tags, e.g. timing's basis) are ones it allows."""
    for name, tp in _hints(cls).items():
        if get_origin(tp) is Literal and name in value and value[name] not in get_args(tp):
            return False
    return True


def _named(value) -> str:
    """" (gate/ptx/tiny/balanced)" for an object with a string key (a row, a verdict), else ""."""
    key = value.get("key") if isinstance(value, dict) else None
    return f" ({key})" if isinstance(key, str) else ""


def decode_value(tp, value, where: str):
    """`value` (parsed JSON) as type `tp`, or RecordError naming `where`, the type found and the type expected."""
    if _is_json_value(tp):
        return _json_value(value, where)
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        arms = get_args(tp)
        if value is None:
            if type(None) in arms:
                return None
            raise _bad(where, value, tp)
        records = [a for a in arms if dataclasses.is_dataclass(a)]
        errors = []
        for arm in (a for a in arms if a is not type(None)):
            try:
                return decode_value(arm, value, where)
            except RecordError as exc:
                errors.append(str(exc))
        if all(e.startswith(f"{where} is ") for e in errors):  # the value itself has none of the types
            raise _bad(where, value, tp)
        fitting = [a for a in records if isinstance(value, dict) and _tags_fit(a, value)]
        if len(fitting) == 1:  # one record whose tag fields (Literal) the value has: its error is the one to tell
            raise RecordError(errors[[a for a in arms if a is not type(None)].index(fitting[0])])
        raise RecordError(errors[0] if len(errors) == 1 else f"{where} matches none of its types: "
                          + "; ".join(errors))
    if origin is Literal:
        if value in get_args(tp) and not isinstance(value, bool):
            return value
        raise _bad(where, value, tp)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _bad(where, value, tp)
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _bad(where, value, tp)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise _bad(where, value, tp)
    if tp is str:
        if isinstance(value, str):
            return value
        raise _bad(where, value, tp)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise _bad(where, value, tp)
        item = get_args(tp)[0]
        return tuple(decode_value(item, v, f"{where}[{i}]{_named(v)}") for i, v in enumerate(value))
    if origin in (Mapping, dict):
        if not isinstance(value, dict):
            raise _bad(where, value, tp)
        item = get_args(tp)[1]
        return {str(k): decode_value(item, v, _field(where, str(k))) for k, v in value.items()}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return decode(tp, value, where)
    raise RecordError(f"{where}: field type {tp!r} has no JSON reading (a bug in the record class)")


def _field(where: str, name: str) -> str:
    """Where a field is: "run.json: rows[2] (gate/ptx/tiny/balanced).timing" (a file's name ends in ":")."""
    return f"{where} {name}" if where.endswith(":") else f"{where}.{name}"


def decode(cls, value, where: str):
    """A record of class `cls` from a parsed JSON object (RecordError naming the bad field otherwise)."""
    if not isinstance(value, dict):
        raise _bad(where, value, cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in value if k not in fields]
    if unknown:
        raise RecordError(f"{where}: unknown field {unknown[0]!r}; a {cls.__name__} has "
                          f"{', '.join(fields)}")
    hints = _hints(cls)
    kwargs = {}
    for name, f in fields.items():
        if name not in value:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise RecordError(f"{_field(where, name)} is missing; expected {_expected(hints[name])}")
            continue
        kwargs[name] = decode_value(hints[name], value[name], _field(where, name))
    record = cls(**kwargs)
    if isinstance(record, Record):
        record.check_record(where)
    return record


def encode(value):
    """Plain JSON data of a record (or of a value inside one); non-finite floats become null."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


class Record:
    """Base of the frozen record dataclasses: `from_json` / `to_json` by the declared field types."""

    @classmethod
    def from_json(cls, value, where: str = "record"):
        """The record from parsed JSON; RecordError naming the field, the type found and the type expected."""
        return decode(cls, value, where)

    def to_json(self) -> dict:
        return encode(self)

    def check_record(self, where: str) -> None:
        """Checks across fields, after each field has its type (none by default)."""
