"""User overrides of the commitment table (YAML/JSON): good files, and every bad input as its own test."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpufleet.catalog.pricing import describe_assumptions, load_commitment_assumptions
from gpufleet.errors import ConfigFileError

GOOD_ENTRY = "{provider: aws, program: reserved, term_years: 1, discount_fraction: 0.35, source: 'our quote'}"


@pytest.fixture(autouse=True)
def _empty_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "none"))


def _one(drop: str = "", **fields: str) -> str:
    """A one-entry override file; ``fields`` replace the good defaults, ``drop`` removes one (YAML flow)."""
    entry = {
        "provider": "aws",
        "program": "reserved",
        "term_years": "1",
        "discount_fraction": "0.3",
        "source": "s",
    }
    entry.update(fields)
    entry.pop(drop, None)
    return "commitments:\n  - {" + ", ".join(f"{k}: {v}" for k, v in entry.items()) + "}\n"


def _write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _load(tmp_path: Path, text: str, name: str = "c.yaml") -> None:
    load_commitment_assumptions(_write(tmp_path, text, name))


def test_merge_adds_and_replaces(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        f"commitments:\n  - {GOOD_ENTRY}\n"
        "  - {provider: gcp, program: cud, term_years: 3, discount_fraction: 0.5, source: s, "
        "verified: true}\n",
    )
    a = load_commitment_assumptions(p)
    assert a.discount("aws", "reserved", 1) == 0.35
    assert a.discount("gcp", "cud", 3) == 0.5
    assert math.isnan(a.discount("azure", "reserved", 3))  # untouched shipped row: unverified, not used
    assert load_commitment_assumptions(p, allow_unverified=True).discount("azure", "reserved", 3) == 0.72
    row = next(
        r for r in describe_assumptions(a) if (r.provider, r.program, r.term_years) == ("aws", "reserved", 1)
    )
    assert str(p) in row.source


def test_user_rows_are_verified_unless_they_say_not(tmp_path: Path) -> None:
    """A user's own rate (quote, contract) is sourced and used; one marked ``verified: false`` needs the
    same opt-in as the shipped ceilings (issue 22)."""
    p = _write(
        tmp_path,
        "commitments:\n"
        "  - {provider: aws, program: reserved, term_years: 1, discount_fraction: 0.3, source: our quote}\n"
        "  - {provider: azure, program: reserved, term_years: 1, discount_fraction: 0.3, source: a guess, "
        "verified: false}\n",
    )
    a = load_commitment_assumptions(p)
    assert a.discount("aws", "reserved", 1) == 0.3
    assert math.isnan(a.discount("azure", "reserved", 1))
    assert load_commitment_assumptions(p, allow_unverified=True).discount("azure", "reserved", 1) == 0.3


def test_null_removes_a_default(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        _one(provider="azure", term_years="3", discount_fraction="null"),
    )
    assert math.isnan(load_commitment_assumptions(p).discount("azure", "reserved", 3))


def test_replace_mode_drops_shipped_rows(tmp_path: Path) -> None:
    a = load_commitment_assumptions(_write(tmp_path, f"mode: replace\ncommitments:\n  - {GOOD_ENTRY}\n"))
    assert [(r.provider, r.program, r.term_years) for r in a.rows] == [("aws", "reserved", 1)]


def test_json_file(tmp_path: Path) -> None:
    text = (
        '{"commitments": [{"provider": "aws", "program": "savings_plan", "term_years": 1, '
        '"discount_fraction": 0.2, "source": "quote"}]}'
    )
    a = load_commitment_assumptions(_write(tmp_path, text, "c.json"))
    assert a.discount("aws", "savings_plan", 1) == 0.2


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"commitment override file .*nope.yaml does not exist"):
        load_commitment_assumptions(tmp_path / "nope.yaml")


def test_bad_yaml_syntax(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"c.yaml is not valid YAML"):
        _load(tmp_path, "commitments: [\n")


def test_bad_json_syntax(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"c.json is not valid JSON"):
        _load(tmp_path, "{commitments: }", "c.json")


def test_top_level_not_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"c.yaml holds list.*not a mapping.*Allowed: top-level keys"):
        _load(tmp_path, "- a\n- b\n")


def test_entry_not_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"entry 1 \(commitments\[0\]\) is 'aws', not a mapping"):
        _load(tmp_path, "commitments:\n  - aws\n")


def test_missing_commitments_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"'commitments'.*Field required"):
        _load(tmp_path, "mode: merge\n")


def test_unknown_top_level_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"'discounts'"):
        _load(tmp_path, f"discounts: []\ncommitments:\n  - {GOOD_ENTRY}\n")


def test_bad_mode(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"'mode'.*'overwrite'.*merge"):
        _load(tmp_path, f"mode: overwrite\ncommitments:\n  - {GOOD_ENTRY}\n")


def test_entry_missing_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"entry 1 \(commitments\[0\]\): field 'source' is missing"):
        _load(
            tmp_path,
            _one(drop="source"),
        )


def test_entry_bad_program(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigFileError, match=r"entry 2 .*'program' has the bad value 'spot'.*reserved, savings_plan"
    ):
        _load(
            tmp_path,
            f"commitments:\n  - {GOOD_ENTRY}\n"
            "  - {provider: aws, program: spot, term_years: 1, discount_fraction: 0.3, source: s}\n",
        )


def test_entry_bad_term(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"'term_years' has the bad value 2.*1 or 3"):
        _load(
            tmp_path,
            _one(term_years="2"),
        )


def test_entry_discount_above_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"'discount_fraction' has the bad value 1.2.*0 <= value < 1"):
        _load(
            tmp_path,
            _one(discount_fraction="1.2"),
        )


def test_entry_discount_negative(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"'discount_fraction' has the bad value -0.1"):
        _load(
            tmp_path,
            _one(discount_fraction="-0.1"),
        )


def test_entry_discount_percent_string(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"'discount_fraction' has the bad value '40%'"):
        _load(
            tmp_path,
            _one(discount_fraction="40%"),
        )


def test_entry_unknown_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"field 'upfront' is not a known field"):
        _load(
            tmp_path,
            _one(upfront="all"),
        )


def test_entry_bad_provider_spelling(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"'provider' has the bad value 'AWS'.*lower-case"):
        _load(
            tmp_path,
            _one(provider="AWS"),
        )
