"""The one input layer for user files, and atomic writes.

Every file gpufleet reads on a user's behalf (workloads, catalogs, overrides, profiles, calibration cases,
configs, telemetry, traces, fleet files) goes through :func:`read_user_bytes` and the functions built on it:

- only regular files (no FIFOs, devices, directories), checked before opening, so no input can hang a read;
- a size limit (:data:`DEFAULT_MAX_BYTES`, per call overridable) stated in the message;
- encoding detection: UTF-8 with or without BOM, UTF-16/UTF-32 with BOM; anything else is an error naming the
  encoding it looks like (Latin-1, binary) and how to convert it;
- YAML through a safe loader that rejects aliases (no alias bombs), duplicate keys and nesting deeper than
  :data:`MAX_NESTING_DEPTH`; JSON with the same duplicate-key and depth rules;
- CSV with a per-field size limit and a row limit, every error naming the file and line.

Each failure is a :class:`~gpufleet.errors.ConfigFileError` whose message names the file, what is wrong,
what is allowed and what to do.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from gpufleet.errors import ConfigFileError, InputError

#: Largest user file read by default [bytes]: 20 MiB; big enough for any workload, catalog or fleet file.
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
#: Deepest nesting of lists/maps accepted in YAML/JSON user files.
MAX_NESTING_DEPTH = 64
#: Largest YAML text parsed [characters]: 2 Mi. PyYAML's safe loader (pure Python: the alias, duplicate-key
#: and depth checks need its composer) reads roughly 0.3-1 MiB/s, so a 20 MiB YAML list of 100,000 items
#: took over a minute; JSON (C parser) keeps DEFAULT_MAX_BYTES. Every shipped or example YAML is < 10 KiB.
MAX_YAML_CHARS = 2 * 1024 * 1024
#: Largest CSV field [characters].
MAX_CSV_FIELD_CHARS = 64 * 1024
#: Bytes read first to tell a binary file (NUL bytes) before reading all of it: a 600 MiB sparse file given
#: as a 1 GiB-limit job file took 5-7 s to be called binary.
_SNIFF_BYTES = 4096
#: Longest path accepted [characters] (longer ones fail in ``stat`` with an OSError).
MAX_PATH_CHARS = 4096


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def check_user_path(path: str | Path, *, what: str = "file") -> Path:
    """``path`` as a Path if it names an existing regular file, else :class:`ConfigFileError`."""
    text = str(path)
    if not text or "\x00" in text:
        raise ConfigFileError(
            f"The {what} path {text[:80]!r} is empty or contains a NUL byte. Give a file path."
        )
    if len(text) > MAX_PATH_CHARS or any(len(part) > 255 for part in Path(text).parts):
        raise ConfigFileError(
            f"The {what} path {text[:60]!r}... is too long ({len(text)} characters; "
            f"at most {MAX_PATH_CHARS}, 255 per path component). Give the path of an existing file."
        )
    p = Path(text)
    try:
        st = p.stat()
    except FileNotFoundError:
        if p.is_symlink():  # a dangling link: name where it points
            raise ConfigFileError(
                f"The {what} {p} is a symbolic link to {os.readlink(p)}, which does not exist. Fix the link "
                "or give the file's own path."
            ) from None
        raise ConfigFileError(f"The {what} {p} does not exist. Check the path.") from None
    except OSError as exc:
        raise ConfigFileError(
            f"The {what} {p} cannot be read ({exc.strerror or exc}). Check the path."
        ) from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigFileError(
            f"The {what} {p} is a directory; a regular file is required. Give the file's path."
        )
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device or special file"
        raise ConfigFileError(
            f"The {what} {p} is {kind}, not a regular file; gpufleet reads only regular files (this avoids "
            "hanging on pipes and devices). Save the content to a file and pass that."
        )
    return p


#: (device, inode) of every user file read while a CLI command runs (:func:`tracking_inputs`), else None:
#: an output path naming one of them is refused, so ``-o`` cannot overwrite the command's own input. The
#: library alone tracks nothing (a notebook may rewrite a profile it loaded).
_INPUTS_READ: set[tuple[int, int]] | None = None


@contextlib.contextmanager
def tracking_inputs() -> Iterator[None]:
    """While the block runs, :func:`check_output_path` refuses the user files read in it (CLI commands)."""
    global _INPUTS_READ
    outer, _INPUTS_READ = _INPUTS_READ, set()
    try:
        yield
    finally:
        _INPUTS_READ = outer


def note_input(path: Path) -> None:
    """Count ``path`` among the files this CLI command reads (:func:`tracking_inputs`), for files read without
    :func:`read_user_bytes` (a telemetry store's manifest and Parquet files): ``-o`` onto one is refused."""
    if _INPUTS_READ is not None:
        with contextlib.suppress(OSError):
            st = path.stat()
            _INPUTS_READ.add((st.st_dev, st.st_ino))


def read_user_bytes(path: str | Path, *, what: str = "file", max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path``: at most ``max_bytes``, else :class:`ConfigFileError`."""
    p = check_user_path(path, what=what)
    if _INPUTS_READ is not None:
        with contextlib.suppress(OSError):
            st = p.stat()
            _INPUTS_READ.add((st.st_dev, st.st_ino))
    try:
        with p.open("rb") as fh:
            if p.stat().st_size > max_bytes:  # a regular file: its size says it without reading it
                data = b"x" * (max_bytes + 1)
            else:
                head = fh.read(_SNIFF_BYTES)
                if b"\x00" in head and not head.startswith(tuple(bom for bom, _ in _BOMS)):
                    decode_user_bytes(head, source=f"The {what} {p}")  # "looks binary", before reading it all
                data = head + fh.read(max_bytes + 1 - len(head))
    except OSError as exc:
        raise ConfigFileError(
            f"The {what} {p} cannot be read ({exc.strerror or exc}). Check its permissions."
        ) from None
    if len(data) > max_bytes:
        raise ConfigFileError(
            f"The {what} {p} is larger than the {_mib(max_bytes)} allowed for it. Split it or remove what is "
            "not needed."
        )
    return data


_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def decode_user_bytes(data: bytes, *, source: str) -> str:
    """Text of ``data``: UTF-8 (BOM optional) or UTF-16/32 with a BOM; otherwise :class:`ConfigFileError`."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(enc)
            except UnicodeDecodeError as exc:
                raise ConfigFileError(
                    f"{source} starts with a {enc.upper()} byte-order mark but is not valid {enc.upper()} "
                    f"(byte {exc.start}). Re-save it as UTF-8."
                ) from None
    if b"\x00" in data[:4096]:
        raise ConfigFileError(
            f"{source} looks binary or UTF-16 without a byte-order mark (it contains NUL bytes). "
            "gpufleet reads text files in UTF-8 (or UTF-16 with a BOM). Give the text file, or convert it: "
            "`iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8`."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        guess = "Latin-1/Windows-1252" if _looks_latin1(data) else "not text (binary)"
        raise ConfigFileError(
            f"{source} is not UTF-8: byte 0x{data[exc.start]:02x} on line {line} is invalid; the file looks "
            f"{guess}. gpufleet reads UTF-8 (or UTF-16 with a BOM). Convert it, e.g. "
            "`iconv -f LATIN1 -t UTF-8 FILE > FILE.utf8`."
        ) from None


def _looks_latin1(data: bytes) -> bool:
    sample = data[:4096]
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 13))
    return control == 0


def read_user_text(path: str | Path, *, what: str = "file", max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The text of the user file ``path`` through the input layer (regular file, size limit, encoding)."""
    p = Path(path)
    return decode_user_bytes(read_user_bytes(p, what=what, max_bytes=max_bytes), source=f"The {what} {p}")


# --------------------------------------------------------------------------------------------- YAML / JSON


class _DuplicateKeyError(ValueError):
    pass


class YamlSyntaxError(ValueError):
    """A YAML syntax, alias, duplicate-key or nesting error from :mod:`gpufleet._yaml_loader`; ``error`` is
    PyYAML's exception (kept here so that catching it does not import PyYAML)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(f"duplicate key {key!r} (the last one would silently win); keep one")
        out[key] = value
    return out


def _json_depth(text: str) -> int:
    depth = best = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth -= 1
    return best


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (write a finite number or null)")


def loads_json_strict(text: str) -> Any:
    """``text`` parsed as one JSON value with the input layer's rules: no duplicate keys, nesting at most
    :data:`MAX_NESTING_DEPTH`, no ``NaN``/``Infinity`` literals. Any problem is a ``ValueError`` whose text
    says what and where (for JSON Lines readers, which add the file and line)."""
    if _json_depth(text) > MAX_NESTING_DEPTH:
        raise ValueError(f"nesting deeper than {MAX_NESTING_DEPTH} levels")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise ValueError(syntax_error_text(exc)) from None
    except RecursionError:
        raise ValueError(f"nesting deeper than {MAX_NESTING_DEPTH} levels") from None


def syntax_error_text(exc: Exception) -> str:
    """A JSON/YAML parser error on one line: what is wrong and where (line, column; 1-based)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def parse_yaml_or_json(path: Path, text: str, describe: Callable[[str, str], str]) -> Any:
    """``text`` parsed as JSON when ``path`` ends in ``.json``, else as YAML, with the input layer's rules.

    A syntax error, an alias, a duplicate key or too deep nesting raises :class:`ConfigFileError` with the
    message ``describe(kind, error)``: ``kind`` is ``"JSON"`` or ``"YAML"``, ``error`` says what and where.
    """
    is_json = path.suffix.lower() == ".json"
    kind = "JSON" if is_json else "YAML"
    try:
        if is_json:
            if _json_depth(text) > MAX_NESTING_DEPTH:
                raise ConfigFileError(describe(kind, f"nesting deeper than {MAX_NESTING_DEPTH} levels"))
            return json.loads(text, object_pairs_hook=_no_duplicates)
        if len(text) > MAX_YAML_CHARS:
            raise ConfigFileError(
                f"{path} holds {_mib(len(text))} of YAML, above the {_mib(MAX_YAML_CHARS)} gpufleet parses "
                "as YAML (YAML parsing is slow: a larger file would take minutes). Save the same content as "
                f"JSON (a .json file is read up to {_mib(DEFAULT_MAX_BYTES)}), or split it."
            )
        from gpufleet._yaml_loader import load_yaml  # PyYAML only where a YAML file is read

        return load_yaml(text)
    except json.JSONDecodeError as exc:
        raise ConfigFileError(describe(kind, syntax_error_text(exc))) from exc
    except YamlSyntaxError as exc:
        raise ConfigFileError(describe(kind, syntax_error_text(exc.error))) from exc.error
    except _DuplicateKeyError as exc:
        raise ConfigFileError(describe(kind, str(exc))) from exc
    except RecursionError:
        raise ConfigFileError(describe(kind, f"nesting deeper than {MAX_NESTING_DEPTH} levels")) from None


def load_structured_file(
    path: str | Path, *, what: str = "file", max_bytes: int = DEFAULT_MAX_BYTES, fmt: str | None = None
) -> Any:
    """Parse the YAML or JSON user file ``path`` (JSON when it ends in .json or ``fmt == "json"``)."""
    p = Path(path)
    text = read_user_text(p, what=what, max_bytes=max_bytes)
    parse_as = p if fmt is None else p.with_suffix(".json" if fmt == "json" else ".yaml")

    def describe(kind: str, error: str) -> str:
        return f"The {what} {p} is not valid {kind}: {error}. Fix the file and run the command again."

    return parse_yaml_or_json(parse_as, text, describe)


def document_kind(value: Any) -> str:
    """What a parsed YAML/JSON document holds, for messages: ``None`` (an empty file, or one of comments
    only) reads as "nothing (the file is empty)", text as what a plain-text or CSV file parses to, and the
    other kinds by their YAML/JSON names after the Python type name (``list (a sequence)``)."""
    if value is None:
        return "nothing (the file is empty or holds only comments)"
    kinds = {
        str: "one plain string, which is what a CSV or plain-text file parses to, not a YAML/JSON mapping",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        list: "a sequence",
        dict: "a mapping",
        set: "a YAML !!set",
        bytes: "YAML !!binary data",
    }
    name = type(value).__name__
    return f"{name} ({kinds[type(value)]})" if type(value) in kinds else name


def check_top_level(
    doc: Any, *, source: str, allowed: Sequence[str], lists: Sequence[str] = (), fix: str = ""
) -> dict[str, Any]:
    """``doc`` (a parsed YAML/JSON file) as a mapping whose keys are all in ``allowed`` and whose keys
    ``lists`` each hold a non-empty list; else :class:`ConfigFileError` naming what is wrong, with the closest
    allowed key for a misspelt or mis-cased one (``RULES:`` for ``rules:``), what is allowed and ``fix``.

    One check for files with a small fixed top level (alert rules, inventories, batch fleets), so an unknown
    key is refused rather than ignored and a wrongly spelt list is named rather than reported missing."""
    shape = ", ".join(f"'{k}:' (a list)" if k in lists else f"'{k}:'" for k in allowed)
    tail = f" {fix}" if fix else ""
    if not isinstance(doc, dict):
        raise ConfigFileError(
            f"{source} must hold a mapping with the keys {shape}; it holds {document_kind(doc)}.{tail}"
        )
    problems = []
    for key in lists:
        value = doc.get(key)
        if value == []:
            problems.append(f"has no entries under '{key}:' (at least one is needed)")
        elif not isinstance(value, list):
            held = "nothing" if value is None else document_kind(value)
            problems.append(f"needs a non-empty list under '{key}:' (it holds {held} there)")
    unknown = [k for k in doc if not isinstance(k, str) or k not in allowed]
    if unknown:
        from gpufleet.errors import MAX_LISTED, capped_list, close_matches

        hints = []
        for key in unknown[:MAX_LISTED]:
            near = close_matches(str(key), allowed, n=1)
            hints.append(f"{str(key)!r} (did you mean {near[0]!r}?)" if near else repr(str(key)))
        problems.append(
            f"has unknown top-level key(s) {capped_list(hints, total=len(unknown))} "
            "(names are case-sensitive; rename or remove "
            "them)"
        )
    if problems:
        raise ConfigFileError(f"{source} {'; it '.join(problems)}. Allowed keys: {shape}.{tail}")
    return doc


# --------------------------------------------------------------------------------------------------- CSV

_DELIMITER_NAMES = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}


def csv_header_hint(header: Sequence[str]) -> str:
    """Advice to append to a message about a CSV header no layout accepts ("" when there is none): a header
    of one cell holding ``;``, tabs or ``|`` is a file separated by them (a spreadsheet export in a locale
    with decimal commas), which gpufleet does not read; a column named twice is named."""
    cells = [h.strip() for h in header]
    if len(cells) == 1:
        for sep, name in _DELIMITER_NAMES.items():
            if sep in cells[0]:
                return (
                    f" The header line is separated by {name}, not commas: gpufleet reads comma-separated "
                    "files with a point as the decimal separator. Export the file as CSV with commas (or "
                    f"replace the {name} with commas)."
                )
    dupes = sorted({c for c in cells if cells.count(c) > 1})
    if dupes:
        return f" The column(s) {', '.join(repr(d) for d in dupes)} appear more than once; give each once."
    return ""


def check_csv_header(header: Sequence[str], *, source: str) -> None:
    """Refuse a CSV header that names a column twice (a later cell would silently overwrite an earlier
    one, or every row would look one cell short) with :class:`ConfigFileError`."""
    cells = [h.strip() for h in header]
    dupes = sorted({c for c in cells if cells.count(c) > 1})
    if dupes:
        raise ConfigFileError(
            f"{source} has duplicate columns {', '.join(repr(d) for d in dupes)} in its header; each column "
            "may appear once. Remove or rename the repeated column."
        )


def iter_csv_text(
    text: str,
    *,
    source: str,
    max_field_chars: int = MAX_CSV_FIELD_CHARS,
    delimiter: str = ",",
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` for every non-empty CSV record of ``text``.

    A field over ``max_field_chars`` or a CSV syntax error raises :class:`ConfigFileError` with the line.
    """
    csv.field_size_limit(max(max_field_chars, 1024))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=False)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ConfigFileError(
                f"{source}: CSV error on line {reader.line_num}: {exc}. Fields are limited to "
                f"{max_field_chars:,} characters; quote fields that contain commas or newlines."
            ) from None
        if row and any(cell.strip() for cell in row):
            yield reader.line_num, row


def read_csv_file(
    path: str | Path,
    *,
    what: str = "CSV file",
    required_columns: Sequence[str] = (),
    allowed_columns: Sequence[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_field_chars: int = MAX_CSV_FIELD_CHARS,
) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and ``(line_number, row)`` records of the CSV user file ``path``.

    The header is stripped of surrounding spaces; a duplicate or missing required column, a column outside
    ``allowed_columns`` (when given: a misspelt column is reported, with the closest names, rather than
    ignored), a row with more cells than the header, or an empty file raises :class:`ConfigFileError` naming
    the file and line.
    """
    p = Path(path)
    source = f"The {what} {p}"
    text = read_user_text(p, what=what, max_bytes=max_bytes)
    rows = iter_csv_text(text, source=source, max_field_chars=max_field_chars)
    try:
        _, header_raw = next(rows)
    except StopIteration:
        raise ConfigFileError(f"{source} is empty; it needs a header line and at least one row.") from None
    header = [h.strip() for h in header_raw]
    check_csv_header(header, source=source)
    missing = [c for c in required_columns if c not in header]
    if missing:
        raise ConfigFileError(
            f"{source} lacks the required columns {missing}; it has {header}. Add them to the header line."
            + csv_header_hint(header)
        )
    if allowed_columns is not None:
        unknown = [h for h in header if h not in allowed_columns]
        if unknown:
            from gpufleet.errors import close_matches

            near = {u: close_matches(u, allowed_columns, n=1) for u in unknown}
            hints = [f"{u!r} (did you mean {m[0]!r}?)" if m else repr(u) for u, m in near.items()]
            raise ConfigFileError(
                f"{source} has unknown columns {', '.join(hints)}. Allowed columns: "
                f"{', '.join(allowed_columns)}. Rename or remove them.{csv_header_hint(header)}"
            )
    out: list[tuple[int, dict[str, str]]] = []
    for line, cells in rows:
        if len(cells) > len(header):
            raise ConfigFileError(
                f"{source}, line {line}: {len(cells)} cells but the header has {len(header)} columns. "
                "Quote fields that contain the delimiter."
            )
        cells = cells + [""] * (len(header) - len(cells))
        out.append((line, dict(zip(header, cells, strict=True))))
    return header, out


# ------------------------------------------------------------------------------------------------ writes


def check_path_text(path: str | Path, *, what: str) -> None:
    """:class:`InputError` for a path no file should be named: a NUL, a line break or another control
    character (a file named ``a<newline>b.json`` breaks every listing and script that reads it), or bytes that
    are not UTF-8 (undecodable bytes from the command line or the environment, which DuckDB and JSON cannot
    carry)."""
    text = str(path)
    bad = next((c for c in text if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        raise InputError(
            f"The {what} path {text[:80]!r} holds the control character {bad!r}. Give a path without line "
            "breaks, tabs or other control characters."
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            f"The {what} path {text[:80]!r} holds bytes that are not UTF-8 text. Give a path in UTF-8."
        ) from None


def check_output_path(path: str | Path, *, what: str = "output file", replaces_input: bool = False) -> Path:
    """``path`` as a Path if a file may be written there: a non-empty path in an existing folder that is not
    a folder, device, FIFO or other special file (an atomic write renames over the target, which would
    replace a device node such as /dev/full); else :class:`InputError` saying what to pass instead.
    ``replaces_input``: the file is state the command updates on purpose (a telemetry store's manifest)."""
    text = str(path)
    if not text.strip() or "\x00" in text or text.endswith(("/", os.sep)):
        raise InputError(f"Cannot write the {what} to {text[:80]!r}: it names no file. Give a file path.")
    check_path_text(text, what=what)
    p = Path(text)
    try:
        st = p.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(
            f"Cannot write the {what} to {p}: {exc.strerror or exc}. Give another path."
        ) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(
            f"Cannot write the {what} to {p}: it is a folder. Give a file path, e.g. {p / 'report.json'}."
        )
    if not replaces_input and st is not None and _INPUTS_READ and (st.st_dev, st.st_ino) in _INPUTS_READ:
        raise InputError(
            f"Cannot write the {what} to {p}: it is one of this command's input files, which the output "
            "would replace. Give another path for the output."
        )
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(
            f"Cannot write the {what} to {p}: it is a device, FIFO or other special file; gpufleet writes "
            "regular files only (it replaces the target atomically). Give a file path, or print to stdout "
            "and redirect it."
        )
    if not p.parent.is_dir():
        raise InputError(
            f"Cannot write the {what} to {p}: the folder {p.parent} does not exist. Create it first "
            f"(mkdir -p {p.parent}) or give a path in an existing folder."
        )
    return p


#: file name extension -> (what such a file holds, the output formats that write it); other extensions: any
_SUFFIX_FORMATS: dict[str, tuple[str, frozenset[str]]] = {
    ".json": ("JSON", frozenset({"json"})),
    ".html": ("HTML", frozenset({"html"})),
    ".htm": ("HTML", frozenset({"html"})),
    ".md": ("Markdown", frozenset({"markdown"})),
    ".markdown": ("Markdown", frozenset({"markdown"})),
    ".csv": ("CSV", frozenset({"csv", "focus"})),
    ".yaml": ("YAML", frozenset({"k8s", "yaml", "prometheus"})),
    ".yml": ("YAML", frozenset({"k8s", "yaml", "prometheus"})),
    ".parquet": ("Parquet", frozenset({"parquet"})),
}
_FORMAT_SUFFIX = {"json": ".json", "html": ".html", "markdown": ".md", "csv": ".csv", "focus": ".csv",
                  "k8s": ".yaml", "prometheus": ".yaml", "parquet": ".parquet"}  # fmt: skip


def check_output_suffix(
    path: str | Path,
    fmt: str,
    *,
    flag: str = "-o/--output",
    what: str | None = None,
    fixed: str | None = None,
) -> None:
    """:class:`InputError` when ``path`` cannot be written (:func:`check_output_path`, reported first) or its
    extension names another format than ``fmt`` (``--format json -o report.html`` wrote JSON into a file a
    browser opens as a page). Unknown extensions and none pass. ``fixed``: what the command always writes
    (no --format to pick), e.g. "a JSON calibration profile"."""
    check_output_path(path, what=what or f"output file ({flag})")
    suffix = Path(str(path)).suffix.lower()
    kind, formats = _SUFFIX_FORMATS.get(suffix, ("", frozenset()))
    if not formats or fmt in formats:
        return
    better = f"{Path(str(path)).with_suffix('')}{_FORMAT_SUFFIX.get(fmt, '.txt')}"
    if fixed:
        raise InputError(
            f"{flag} {path} ends in {suffix}, the extension of {kind} files, but it receives {fixed}. "
            f"Name the file for its content (e.g. {better})."
        )
    raise InputError(
        f"{flag} {path} ends in {suffix}, the extension of {kind} files, but --format {fmt} writes "
        f"{fmt}. Name the file for its content (e.g. {better}), or pick the --format its name says."
    )


def atomic_write_bytes(
    path: Path, data: bytes, *, what: str = "output file", replaces_input: bool = False
) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, fsynced, then renamed.

    ``path`` is checked first (:func:`check_output_path`); a failed write is an :class:`InputError` naming the
    path and the reason (permissions, disk full), never a traceback.
    """
    import tempfile  # only where a file is written (~1.5 ms of start-up otherwise)

    path = check_output_path(path, what=what, replaces_input=replaces_input)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(
            f"Cannot write the {what} to {path}: {exc.strerror or exc}. Give a path in a writable folder."
        ) from None
    try:
        os.fchmod(fd, _new_file_mode(path))  # mkstemp makes 0600; a report or data file gets the usual mode
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(
            f"Cannot write the {what} to {path}: {exc.strerror or exc}. Free some space or give another path."
        ) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _new_file_mode(path: Path) -> int:
    """The mode ``open()`` would give: the existing file's mode, else 0666 less the process umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_text(
    path: Path, text: str, *, what: str = "output file", replaces_input: bool = False
) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"), what=what, replaces_input=replaces_input)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_CSV_FIELD_CHARS",
    "MAX_NESTING_DEPTH",
    "MAX_YAML_CHARS",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_csv_header",
    "check_output_path",
    "check_output_suffix",
    "check_path_text",
    "check_top_level",
    "check_user_path",
    "csv_header_hint",
    "decode_user_bytes",
    "document_kind",
    "iter_csv_text",
    "load_structured_file",
    "loads_json_strict",
    "note_input",
    "parse_yaml_or_json",
    "read_csv_file",
    "read_user_bytes",
    "read_user_text",
    "syntax_error_text",
    "tracking_inputs",
]
