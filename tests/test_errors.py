from __future__ import annotations

from gpufleet.errors import GpufleetError, InputError, UnknownNameError, close_matches


def test_unknown_name_lists_close_matches() -> None:
    err = UnknownNameError("GPU", "H10", ["H100-SXM", "H100-PCIe", "A100-SXM-40GB"])
    assert isinstance(err, InputError)
    assert isinstance(err, GpufleetError)
    assert "H100-SXM" in str(err)
    assert str(err).startswith("Unknown GPU 'H10'")


def test_close_matches_falls_back_to_known_list() -> None:
    err = UnknownNameError("model", "zzz", ["a", "b"])
    assert "Known models: a, b." in str(err)
    assert close_matches("zzz", ["a", "b"]) == []
