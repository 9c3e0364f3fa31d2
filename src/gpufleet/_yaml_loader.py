"""The input layer's YAML loader (:func:`gpufleet.fileio.parse_yaml_or_json`): PyYAML's SafeLoader without
aliases/anchors (no alias bombs), duplicate keys or nesting deeper than ``MAX_NESTING_DEPTH``.

Its own module so that PyYAML is imported only where a YAML file is read, not at every start-up. Syntax errors
come out as :class:`gpufleet.fileio.YamlSyntaxError` (carrying PyYAML's error), which the input layer words.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from gpufleet.fileio import MAX_NESTING_DEPTH, YamlSyntaxError


class _SafeLoader(yaml.SafeLoader):
    """SafeLoader without aliases/anchors, duplicate keys or deep nesting."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "YAML aliases (*name) are not accepted in gpufleet files (they allow 'alias bombs'); "
                "write the values out",
                event.start_mark,
            )
        depth = getattr(self, "_gf_depth", 0) + 1
        if depth > MAX_NESTING_DEPTH:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"nesting deeper than {MAX_NESTING_DEPTH} levels",
                self.peek_event().start_mark,  # type: ignore[no-untyped-call]
            )
        self._gf_depth = depth
        try:
            return super().compose_node(parent, index)
        finally:
            self._gf_depth = depth - 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r} (the last one would silently win); keep one",
                        key_node.start_mark,
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_SafeLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    lambda loader, node: loader.construct_mapping(node, deep=True),  # type: ignore[arg-type]
)


# YAML 1.2 floats that YAML 1.1 (PyYAML) reads as text: an exponent without a dot or a sign (1e3, 1.5e3).
# As text, `concurrency: 1e3` failed as "not a valid integer"; `train_tokens: 1e12` worked by coercion only.
_SafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _no_sexagesimal(kind: str) -> Any:
    """YAML 1.1 reads ``8:32`` as the base-60 number 512 (and ``1:30:00`` as 5400); YAML 1.2 and people
    read text. Such a scalar stays text, so a number field given a clock time is refused by its own
    check ("not a valid integer") instead of silently becoming a count of minutes."""
    base = yaml.SafeLoader.construct_yaml_int if kind == "int" else yaml.SafeLoader.construct_yaml_float

    def construct(loader: Any, node: Any) -> Any:
        if ":" in str(node.value):
            return str(node.value)
        return base(loader, node)

    return construct


_SafeLoader.add_constructor("tag:yaml.org,2002:int", _no_sexagesimal("int"))
_SafeLoader.add_constructor("tag:yaml.org,2002:float", _no_sexagesimal("float"))


def load_yaml(text: str) -> Any:
    """``text`` parsed with :class:`_SafeLoader`; any PyYAML error is a :class:`YamlSyntaxError`."""
    try:
        return yaml.load(text, Loader=_SafeLoader)
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(exc) from exc
