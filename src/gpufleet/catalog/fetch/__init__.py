"""Live price refresh from provider APIs (Azure Retail Prices, AWS price-list bulk files, GCP Cloud Billing).

Layers: ``http`` (the only network code) -> ``azure`` / ``aws`` / ``gcp`` (pure parsers over decoded JSON, and
normalisers to our nomenclature) -> ``refresh`` (orchestration) -> ``store`` (atomic writes into the user data
directory, never over a file we did not write). Importing this package touches neither network nor disk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet._lazy import lazy_getattr

if TYPE_CHECKING:
    from gpufleet.catalog.fetch.normalise import RefreshResult
    from gpufleet.catalog.fetch.pipeline import PROVIDERS, WrittenFiles, refresh, write_result
    from gpufleet.catalog.fetch.rates import CommitmentRate
    from gpufleet.catalog.fetch.store import refreshed_offer_files

#: public name -> defining module, imported on first use (PEP 562): the price kinds read fetched rates
#: through ``fetch.rates`` on every query, and must not pay for httpx and the API clients.
_LAZY: dict[str, str] = {
    "PROVIDERS": "gpufleet.catalog.fetch.pipeline",
    "CommitmentRate": "gpufleet.catalog.fetch.rates",
    "RefreshResult": "gpufleet.catalog.fetch.normalise",
    "WrittenFiles": "gpufleet.catalog.fetch.pipeline",
    "refresh": "gpufleet.catalog.fetch.pipeline",
    "refreshed_offer_files": "gpufleet.catalog.fetch.store",
    "write_result": "gpufleet.catalog.fetch.pipeline",
}
__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "PROVIDERS",
    "CommitmentRate",
    "RefreshResult",
    "WrittenFiles",
    "refresh",
    "refreshed_offer_files",
    "write_result",
]
