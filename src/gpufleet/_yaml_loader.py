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
        # SafeConstructor's, named (not super()): _CSafeLoader shares this method
        return yaml.constructor.SafeConstructor.construct_mapping(self, node, deep=deep)


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


#: files shorter than this [characters] are parsed by the pure-Python loader alone (fast enough, ~10 ms)
_C_FROM_CHARS = 16 * 1024


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


_CLoader: Any = None
if getattr(yaml, "__with_libyaml__", False):

    class _CSafeLoader(yaml.CSafeLoader):
        """The same constructors and resolvers as :class:`_SafeLoader` over libyaml's parser (C)."""

        construct_mapping = _SafeLoader.construct_mapping

    _CSafeLoader.yaml_constructors = dict(_SafeLoader.yaml_constructors)
    _CSafeLoader.yaml_implicit_resolvers = {
        k: list(v) for k, v in _SafeLoader.yaml_implicit_resolvers.items()
    }
    _CLoader = _CSafeLoader


def _plain_for_c(text: str) -> bool:
    """True when libyaml's events of ``text`` hold no alias, no anchor and no nesting deeper than
    ``MAX_NESTING_DEPTH``: what :class:`_SafeLoader` would accept. Any parser error: False."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_CLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                return False
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_NESTING_DEPTH - 1:
                    return False
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return False
    return True


def load_yaml(text: str) -> Any:
    """``text`` parsed with :class:`_SafeLoader`; any PyYAML error is a :class:`YamlSyntaxError`.

    PyYAML's pure-Python parser reads ~120 kB/s (a 1 MB workload file of 100,000 keys took 8 s, the 2 MiB
    that :data:`gpufleet.fileio.MAX_YAML_CHARS` admits about 16 s). A well-formed file without aliases and not
    nested too deep (checked on libyaml's event stream, ~0.25 s per MB) is built by the same constructors
    over libyaml's parser (~1 s per MB); anything else goes through :class:`_SafeLoader`, whose errors the
    messages quote."""
    try:
        if _CLoader is not None and len(text) > _C_FROM_CHARS and _plain_for_c(text):
            try:
                return yaml.load(text, Loader=_CLoader)
            except yaml.YAMLError:
                pass  # e.g. a duplicate key: worded from the pure-Python loader below
        return yaml.load(text, Loader=_SafeLoader)
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(exc) from exc
