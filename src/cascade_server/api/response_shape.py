"""Which fields of a model the API leaves out of its answers while they hold their default (a
run entry's `shards` of 1, a sim's `shard` of null, ...), found the way the server writes every
answer: one instance with each field at its default, serialized as JSON, and the fields missing
from it. The agent prompt's and the reference's types say so per field, so what they list is
what a client really reads. Pure."""

from __future__ import annotations

import types
from datetime import UTC, datetime
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

_EXAMPLE_TIME = datetime(2026, 1, 1, tzinfo=UTC)


def example(annotation: Any) -> Any:
    """A value of `annotation`, to fill a required field: only its presence in the answer counts."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return example(args[0])
    if origin in (Union, types.UnionType):
        return example(next((a for a in args if a is not type(None)), type(None)))
    if origin is Literal:
        return args[0]
    if origin is tuple:
        return tuple(example(a) for a in args if a is not Ellipsis)
    if origin in (list, set, frozenset):
        return []
    if origin is dict:
        return {}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return instance_with_defaults(annotation)
    return {str: "x", int: 1, float: 1.0, bool: False, datetime: _EXAMPLE_TIME}.get(annotation)


def instance_with_defaults(model: type[BaseModel]) -> BaseModel:
    required = {
        name: example(info.annotation) for name, info in model.model_fields.items() if info.is_required()
    }
    return model.model_construct(**required)


@cache
def omitted_when_default(model: type[BaseModel]) -> dict[str, Any]:
    """Field name -> its default, for each field an answer leaves out while it holds it (fields
    never sent, `exclude=True`, are not listed: they are no part of any answer)."""
    written = instance_with_defaults(model).model_dump(mode="json", warnings=False)
    return {
        name: info.get_default(call_default_factory=True)
        for name, info in model.model_fields.items()
        if not info.exclude and not info.is_required() and name not in written
    }


def omission_note(model: type[BaseModel], name: str) -> str:
    """`Omitted when default (`1`).` for a field answers leave out at its default, else ``."""
    omitted = omitted_when_default(model)
    if name not in omitted:
        return ""
    default = omitted[name]
    if default is None:
        shown = "null"
    elif default in ({}, []):
        shown = "empty"
    elif isinstance(default, bool):
        shown = f"`{str(default).lower()}`"
    elif isinstance(default, str):
        shown = f'`"{default}"`'
    else:
        shown = f"`{default}`"
    return f"Omitted when default ({shown})."
