"""One pydantic base for the files users write (workloads, user catalogs, fleet files) with three rules that
pydantic's own types do not give:

- YAML/JSON ``true`` and ``false`` are not numbers: pydantic reads a boolean as 1/0 in an int/float field,
  which would turn a typo into a silent answer;
- a number field without its own upper bound accepts at most :data:`MAX_FILE_NUMBER` in magnitude (``1e300``
  would reach the solvers and overflow; fields with larger legitimate values state their own ``le=``);
- a text field (or an item of a text list) may not be blank unless blank is its default: ``provider: ''``
  names nothing and would match nothing (or everything) silently;
- a selecting list named in :attr:`NoBoolNumbers.SELECTORS` (``providers``, ``gpus``, ...) may not be given
  empty: ``providers: []`` selects nothing, and reading it as "no filter" would be a silent guess.

:class:`NoBoolNumbers` refuses each with the field's name. Imported only where a file is validated (pydantic
is not loaded at CLI start-up).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, model_validator

#: Largest magnitude of a number in a user file when its field states no bound of its own: 10^12 (the
#: largest money amount gpufleet accepts, :data:`gpufleet.validation.MAX_USD`; counts, sizes and prices are
#: far below it).
MAX_FILE_NUMBER = 1e12


def is_numeric_annotation(annotation: Any) -> bool:
    """``annotation`` is int or float, optional or not."""
    return annotation in (int, float) or any(a in (int, float) for a in getattr(annotation, "__args__", ()))


def _is_number_list(annotation: Any) -> bool:
    """``annotation`` is a list of int or float, optional or not."""
    if getattr(annotation, "__origin__", None) is list:
        return is_numeric_annotation(annotation.__args__[0])
    return any(_is_number_list(a) for a in getattr(annotation, "__args__", ()))


def _is_text_annotation(annotation: Any) -> bool:
    """``annotation`` is str or list[str], optional or not."""
    if annotation is str:
        return True
    args = getattr(annotation, "__args__", ())
    return any(_is_text_annotation(a) for a in args)


def _has_upper_bound(metadata: list[Any]) -> bool:
    return any(getattr(m, "le", None) is not None or getattr(m, "lt", None) is not None for m in metadata)


def _blank(value: Any) -> bool:
    return isinstance(value, str) and not value.strip()


class NoBoolNumbers(BaseModel):
    """A model whose int/float fields refuse booleans and unbounded magnitudes, and whose text fields refuse
    blanks (module doc; subclasses set their own ``model_config``)."""

    #: Number fields whose own validator states their bound (and words its message): not held to
    #: :data:`MAX_FILE_NUMBER` here, so that the field's message names its real limit.
    OWN_BOUNDS: ClassVar[frozenset[str]] = frozenset()
    #: List fields that select (filters): an explicit empty list is refused; leaving the field out keeps all.
    SELECTORS: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        for key, value in data.items():
            field = cls.model_fields.get(str(key))
            if field is None:
                continue
            if str(key) in cls.SELECTORS and isinstance(value, list) and not value:  # as a file writes it
                raise ValueError(
                    f"{key}: an empty list selects nothing. Name at least one value, or leave {key} out to "
                    "keep every choice."
                )
            numbers = (
                [value]
                if is_numeric_annotation(field.annotation)
                else value
                if isinstance(value, list) and _is_number_list(field.annotation)
                else []
            )
            for number in numbers:
                if isinstance(number, bool):
                    raise ValueError(
                        f"{key}: got the boolean {str(number).lower()}, expected a number. "
                        f"Write a number for {key} (or leave it out for the default)."
                    )
                if (
                    isinstance(number, int | float)
                    and math.isfinite(number)
                    and abs(number) > MAX_FILE_NUMBER
                    and not _has_upper_bound(field.metadata)
                    and str(key) not in cls.OWN_BOUNDS
                ):
                    raise ValueError(
                        f"{key}: {number!r} is beyond the largest number gpufleet accepts in a file "
                        f"({MAX_FILE_NUMBER:g}); check the unit and the number of digits."
                    )
            if _is_text_annotation(field.annotation) and field.default != "":
                items = value if isinstance(value, list) else [value]
                if any(_blank(v) for v in items):
                    raise ValueError(
                        f"{key}: a blank text {value!r} names nothing. Write the value, or leave {key} out "
                        "for the default."
                    )
        return data


__all__ = ["MAX_FILE_NUMBER", "NoBoolNumbers", "is_numeric_annotation"]
