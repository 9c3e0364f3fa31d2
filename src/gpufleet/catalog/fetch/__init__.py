"""Live price refresh from provider APIs (Azure Retail Prices, AWS price-list bulk files, GCP Cloud Billing).

Layers: ``http`` (the only network code) -> ``azure`` / ``aws`` / ``gcp`` (pure parsers over decoded JSON, and
normalisers to our nomenclature) -> ``refresh`` (orchestration) -> ``store`` (atomic writes into the user data
directory, never over a file we did not write). Importing this package touches neither network nor disk.
"""

from __future__ import annotations

from gpufleet.catalog.fetch.normalise import RefreshResult
from gpufleet.catalog.fetch.pipeline import PROVIDERS, WrittenFiles, refresh, write_result
from gpufleet.catalog.fetch.rates import CommitmentRate
from gpufleet.catalog.fetch.store import refreshed_offer_files

__all__ = [
    "PROVIDERS",
    "CommitmentRate",
    "RefreshResult",
    "WrittenFiles",
    "refresh",
    "refreshed_offer_files",
    "write_result",
]
