"""Write the JSON Schema of every gpufleet JSON document kind to src/gpufleet/report/schemas/ (atomic writes).

Run after changing a result type: ``.venv/bin/python tools/gen_json_schemas.py``.
"""

from __future__ import annotations

from pathlib import Path

from gpufleet.fileio import atomic_write_text
from gpufleet.report.json_schemas import build_schemas, schema_text

OUT = Path(__file__).resolve().parent.parent / "src" / "gpufleet" / "report" / "schemas"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for kind, schema in build_schemas().items():
        atomic_write_text(OUT / f"{kind}.schema.json", schema_text(schema))
        print(f"wrote {kind}.schema.json")


if __name__ == "__main__":
    main()
