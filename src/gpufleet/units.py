"""Unit constants: the only place where conversion factors live.

Names carry their unit everywhere else (``mem_gib``, ``price_usd_per_hour``, ``ttft_s``). Convert with these
constants only. GiB (2**30 bytes) is not GB (10**9 bytes): vendors quote GB, devices report MiB/GiB.
"""

from __future__ import annotations

# --- bytes ---
KIB = 2**10
MIB = 2**20
GIB = 2**30
KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12

# --- rates ---
GIGA = 1e9
TERA = 1e12
PETA = 1e15

# --- time ---
MS_PER_S = 1000.0
US_PER_S = 1_000_000  # microseconds per second (telemetry timestamps are UTC microseconds)
SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0
SECONDS_PER_DAY = SECONDS_PER_HOUR * HOURS_PER_DAY
DAYS_PER_YEAR = 365.0
HOURS_PER_YEAR = 8760.0  # 365 d x 24 h, as used by AWS/Azure for commitment terms
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0  # 730 h: the cloud billing convention (AWS, Azure, GCP calculators)

# --- money ---
MILLION = 1e6
PERCENT = 100.0  # percent in a whole (20 % = 0.2)


def gib_from_mib(mib: float) -> float:
    """MiB -> GiB."""
    return mib * MIB / GIB


def gib_from_gb(gb: float) -> float:
    """Decimal GB -> GiB (e.g. 80 GB = 74.5 GiB)."""
    return gb * GB / GIB


def gb_from_gib(gib: float) -> float:
    """GiB -> decimal GB."""
    return gib * GIB / GB


BITS_PER_BYTE = 8.0


def gb_per_s_from_gbit_per_s(gbit_per_s: float) -> float:
    """Network rate in decimal Gb/s -> decimal GB/s (400 Gb/s = 50 GB/s)."""
    return gbit_per_s / BITS_PER_BYTE


def gib_from_bytes(n_bytes: float) -> float:
    """Bytes -> GiB."""
    return n_bytes / GIB


# --- energy ---
WH_PER_KWH = 1000.0


def kwh_from_wh(wh: float) -> float:
    """Watt-hours -> kilowatt-hours."""
    return wh / WH_PER_KWH
