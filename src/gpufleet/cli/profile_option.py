"""The ``--profile PATH`` option shared by `gpufleet estimate ...`, `validate` and `calibrate`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpufleet.errors import ConfigFileError, GpufleetError

if TYPE_CHECKING:
    from gpufleet.estimate.calibration import CalibrationProfile

ProfileOption = Annotated[
    Path | None,
    typer.Option(
        "--profile",
        help="Calibration profile JSON written by `gpufleet calibrate` (default: the shipped profile).",
        dir_okay=False,
    ),
]


def load_profile_option(path: Path | None) -> CalibrationProfile | None:
    """The profile at ``path`` (None = the shipped one, chosen by the estimator); any bad file is a
    :class:`ConfigFileError` naming it."""
    if path is None:
        return None
    from gpufleet.fileio import check_user_path

    check_user_path(path, what="calibration profile")  # a FIFO, device or directory: say which
    if not path.is_file():
        raise ConfigFileError(
            f"Profile file {str(path)!r} does not exist. Pass a JSON file written by "
            "`gpufleet calibrate CASES.csv -o PROFILE.json`, or leave out --profile for the shipped profile."
        )
    from gpufleet.estimate.calibration import load_profile

    try:
        return load_profile(path)
    except GpufleetError:
        raise
    except (ValueError, KeyError, TypeError, OSError, json.JSONDecodeError) as exc:
        raise ConfigFileError(
            f"Profile file {str(path)!r} is not a valid calibration profile ({type(exc).__name__}: {exc}). "
            "Write it again with `gpufleet calibrate CASES.csv -o PROFILE.json`, or leave out --profile."
        ) from None
