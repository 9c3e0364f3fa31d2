"""One pydantic base for the files users write (workloads, user catalogs, fleet files): YAML/JSON ``true`` and
``false`` are not numbers. pydantic reads a boolean as 1/0 in an int/float field, which would turn a typo
into a silent answer; :class:`NoBoolNumbers` refuses it with the field's name. Imported only where a file is
validated (pydantic is not loaded at CLI start-up).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, model_validator


def is_numeric_annotation(annotation: Any) -> bool:
    """``annotation`` is int or float, optional or not."""
    return annotation in (int, float) or any(a in (int, float) for a in getattr(annotation, "__args__", ()))


class NoBoolNumbers(BaseModel):
    """A model whose int/float fields refuse booleans (subclasses set their own ``model_config``)."""

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for key, value in data.items():
                field = cls.model_fields.get(str(key))
                if isinstance(value, bool) and field is not None and is_numeric_annotation(field.annotation):
                    raise ValueError(
                        f"{key}: got the boolean {str(value).lower()}, expected a number. "
                        f"Write a number for {key} (or leave it out for the default)."
                    )
        return data


__all__ = ["NoBoolNumbers", "is_numeric_annotation"]
