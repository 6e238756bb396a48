"""Reading a report's JSON back into its typed model: one object at a time, every refusal one line
naming the file (as the user gave it) and the field.

The typed report models (``trajectory_model``, ``health_model``, ``hillclimb_model``) read their
schema with :func:`report_fields` (which checks ``schema_version`` with
:func:`evalarc.schemas.check_schema`, so a newer version is refused naming the file and both
versions) and :class:`Fields`. Numbers are kept as read: an ``int`` stays an ``int``, so a model
written back gives the same bytes.

Pure: nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from evalarc.canonical import JSONValue
from evalarc.errors import InputError
from evalarc.formats.model import Source
from evalarc.schemas import check_schema

_T = TypeVar("_T")


def _shown(key: str) -> str:
    text = "".join(char if char.isprintable() else "?" for char in key[:40])
    return repr(text + ("…" if len(key) > 40 else ""))


class Fields:
    """One JSON object of a report being read; ``where`` is its path in the report."""

    __slots__ = ("data", "name", "where")

    def __init__(self, value: object, name: str, where: str = "") -> None:
        if not isinstance(value, dict):
            raise InputError(f"{name}: {where or 'the report'} is not a JSON object")
        self.data: dict[str, object] = value
        self.name = name
        self.where = where

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, problem: str) -> InputError:
        return InputError(f"{self.name}: {self.path(key)} {problem}")

    def only(self, *keys: str) -> None:
        """Refuse a field the schema does not define (it could not be written back)."""
        for key in self.data:
            if key not in keys:
                where = self.where or "the report"
                raise InputError(f"{self.name}: {where} has an unknown field {_shown(key)}")

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str) -> object:
        if key not in self.data:
            raise self.fail(key, "is missing")
        return self.data[key]

    def json(self, key: str) -> JSONValue:
        """A part kept as plain JSON (nobody reads it field by field)."""
        return self.raw(key)

    def json_object(self, key: str) -> dict[str, JSONValue]:
        value = self.raw(key)
        if not isinstance(value, dict):
            raise self.fail(key, "is not a JSON object")
        return value

    def opt_json_object(self, key: str) -> dict[str, JSONValue] | None:
        return None if self.raw(key) is None else self.json_object(key)

    def integer(self, key: str) -> int:
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, "is not an integer")
        return value

    def count(self, key: str) -> int:
        value = self.integer(key)
        if value < 0:
            raise self.fail(key, "is negative")
        return value

    def opt_integer(self, key: str) -> int | None:
        return None if self.raw(key) is None else self.integer(key)

    def number(self, key: str) -> float:
        """A number as read (an ``int`` stays an ``int``)."""
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, "is not a number")
        return value

    def opt_number(self, key: str) -> float | None:
        return None if self.raw(key) is None else self.number(key)

    def text(self, key: str) -> str:
        value = self.raw(key)
        if not isinstance(value, str):
            raise self.fail(key, "is not a string")
        return value

    def opt_text(self, key: str) -> str | None:
        return None if self.raw(key) is None else self.text(key)

    def choice(self, key: str, choices: Sequence[str]) -> str:
        value = self.text(key)
        if value not in choices:
            raise self.fail(key, f"is not one of {', '.join(choices)}")
        return value

    def flag(self, key: str) -> bool:
        value = self.raw(key)
        if not isinstance(value, bool):
            raise self.fail(key, "is not true or false")
        return value

    def true_if_present(self, key: str) -> bool:
        """A flag the schema writes only when it is true."""
        if key not in self.data:
            return False
        if self.data[key] is not True:
            raise self.fail(key, "is written only as true")
        return True

    def obj(self, key: str) -> Fields:
        return Fields(self.raw(key), self.name, self.path(key))

    def opt_obj(self, key: str) -> Fields | None:
        return None if self.raw(key) is None else self.obj(key)

    def items(self, key: str) -> list[object]:
        value = self.raw(key)
        if not isinstance(value, list):
            raise self.fail(key, "is not a list")
        return value

    def objects(self, key: str, read: Callable[[Fields], _T]) -> tuple[_T, ...]:
        """Each item of the list ``key``, read as an object by ``read``."""
        return tuple(
            read(Fields(item, self.name, f"{self.path(key)}[{index}]"))
            for index, item in enumerate(self.items(key))
        )

    def texts(self, key: str) -> tuple[str, ...]:
        found: list[str] = []
        for index, value in enumerate(self.items(key)):
            if not isinstance(value, str):
                raise self.fail(f"{key}[{index}]", "is not a string")
            found.append(value)
        return tuple(found)

    def integers(self, key: str) -> tuple[int, ...]:
        found: list[int] = []
        for index, value in enumerate(self.items(key)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.fail(f"{key}[{index}]", "is not an integer")
            found.append(value)
        return tuple(found)

    def numbers(self, key: str) -> dict[str, float]:
        """An object of name -> number, in file order."""
        value = self.json_object(key)
        for name, number in value.items():
            if isinstance(number, bool) or not isinstance(number, int | float):
                raise self.fail(f"{key}.{name}", "is not a number")
        return dict(value)

    def counts(self, key: str) -> dict[str, int]:
        """An object of name -> non-negative integer, in file order."""
        value = self.json_object(key)
        for name, number in value.items():
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                raise self.fail(f"{key}.{name}", "is not a count")
        return dict(value)

    def interval(self, key: str) -> tuple[float, float] | None:
        """A ``[low, high]`` pair of numbers, or null."""
        value = self.raw(key)
        if value is None:
            return None
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(
                isinstance(bound, int | float) and not isinstance(bound, bool) for bound in value
            )
        ):
            raise self.fail(key, "is not a [low, high] pair of numbers")
        return (value[0], value[1])

    def source(self, key: str = "source") -> Source:
        part = self.obj(key)
        part.only("name", "sha256")
        return Source(part.text("name"), part.text("sha256"))


def report_fields(value: object, schema: str, name: str) -> Fields:
    """The top-level object of a report of ``schema`` read from the file ``name``; refuses
    another schema, or a newer version of it naming both versions."""
    if not isinstance(value, dict):
        raise InputError(f"{name} is not a JSON object")
    check_schema(value, schema, name)
    return Fields(value, name)
