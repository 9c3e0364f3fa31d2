"""The host CPU architecture of an offer, for a move's complexity: a serving or training stack built for
x86_64 does not run on an arm64 host (NVIDIA Grace in GH200/GB200/GB300 superchips, AWS Graviton in g5g)
until its container images, Python wheels and custom ops are rebuilt for aarch64."""

from __future__ import annotations

from functools import cache

#: spec ids (prefixes) whose GPU is one module with an NVIDIA Grace (Arm Neoverse V2) CPU: the host is arm64
#: whatever the catalog row says (NVIDIA GH200 / GB200 datasheets: "Grace CPU", 72 Arm Neoverse V2 cores)
GRACE_GPUS = ("GH200", "GB200", "GB300")


@cache
def _catalog_arch() -> dict[tuple[str, str], str]:
    from gpufleet.catalog.offers import load_offers

    t = load_offers()
    out: dict[tuple[str, str], str] = {}
    for p, i, a in zip(t.column("provider"), t.column("instance_type"), t.column("arch"), strict=True):
        if a:
            out.setdefault((str(p), str(i)), str(a))
    return out


def host_arch(provider: str, instance_type: str, gpu: str) -> str | None:
    """``arm64``, ``x86_64`` or None (not known): the catalog's ``arch`` of the instance, else arm64 for a
    Grace superchip."""
    a = _catalog_arch().get((provider, instance_type))
    if a:
        return a
    if gpu.upper().startswith(GRACE_GPUS):
        return "arm64"
    return None


def arch_change(cur: tuple[str, str, str], new: tuple[str, str, str]) -> str:
    """A complexity reason when the move changes the host CPU architecture ('' when it does not, or when
    either side is not known). A GPU host that is not a Grace superchip and has no catalog ``arch`` is taken
    as x86_64 (every other GPU host in the catalog is)."""
    a = host_arch(*cur) or "x86_64"
    b = host_arch(*new) or "x86_64"
    if a == b:
        return ""
    return (
        f"host CPU {a} -> {b}: container images, Python wheels and custom ops must be built for "
        f"{'aarch64' if b == 'arm64' else b}"
    )
