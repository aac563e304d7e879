"""Frozen dataclasses to JSON-able data and back, by their type hints: how a resolved cluster definition
travels between processes (tuples become lists, paths strings; dicts and scalars stay as they are)."""
from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path


def encode(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def decode(tp, data):
    """`data` (from encode) as a value of type `tp`: a dataclass, tuple[X, ...], tuple[X, Y], X | None, Path,
    or anything JSON holds as is."""
    if data is None:
        return None
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{f.name: decode(hints[f.name], data[f.name]) for f in dataclasses.fields(tp) if f.name in data})
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return decode(next(a for a in args if a is not type(None)), data)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v) for v in data)
        return tuple(decode(a, v) for a, v in zip(args, data))
    if tp is Path:
        return Path(data)
    return data
