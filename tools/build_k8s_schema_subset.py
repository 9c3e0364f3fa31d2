"""Build the Kubernetes JSON-schema subset the fleet tests validate manifests against.

Source: the kubernetes-validate wheel (PyPI, Apache-2.0, https://github.com/willthames/kubernetes-validate),
which ships the JSON schemas generated from the official Kubernetes OpenAPI spec
(kubernetes/kubernetes api/openapi-spec). We take ``v1.31.0-local-strict/deployment-apps-v1.json`` and the
transitive closure of the ``$defs`` it references from ``_definitions.json``, and write one self-contained
schema; a second argument picks another object (``job-batch-v1``: the batch/v1 Job the plan exports for
training and batch workloads).

    pip download kubernetes-validate==1.31.0 --no-deps -d /tmp/kv && unzip /tmp/kv/*.whl -d /tmp/kv/x
    python tools/build_k8s_schema_subset.py \
        /tmp/kv/x/kubernetes_validate/kubernetes-json-schema/v1.31.0-local-strict [job-batch-v1]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "tests" / "fleet" / "data"
KINDS = {"deployment-apps-v1": "Deployment apps/v1", "job-batch-v1": "Job batch/v1"}
PREFIX = "/api/_definitions.json#/$defs/"
LOCAL = "#/$defs/"


def _refs(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith((PREFIX, LOCAL)):
            out.add(ref.removeprefix(PREFIX).removeprefix(LOCAL))
        for v in node.values():
            _refs(v, out)
    elif isinstance(node, list):
        for v in node:
            _refs(v, out)


def _rewrite(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            out[k] = LOCAL + v.removeprefix(PREFIX).removeprefix(LOCAL) if k == "$ref" else _rewrite(v)
        return out
    if isinstance(node, list):
        return [_rewrite(v) for v in node]
    return node


def main(folder: str, kind: str = "deployment-apps-v1") -> None:
    root = Path(folder)
    out = DATA / f"k8s-v1.31-{kind}.schema.json"
    top = json.loads((root / f"{kind}.json").read_text())
    defs = json.loads((root / "_definitions.json").read_text())["$defs"]
    need: set[str] = set()
    _refs(top, need)
    done: set[str] = set()
    while need - done:
        name = sorted(need - done)[0]
        done.add(name)
        _refs(defs[name], need)
    schema = _rewrite(top)
    schema["$defs"] = {k: _rewrite(defs[k]) for k in sorted(done)}
    schema["$comment"] = (
        "Subset of the Kubernetes v1.31 JSON schema (kubernetes-validate 1.31.0 wheel, Apache-2.0, "
        f"generated from the official OpenAPI spec): {KINDS[kind]} and the definitions it references."
        " Built by "
        "tools/build_k8s_schema_subset.py."
    )
    out.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out} ({len(done)} definitions)")


if __name__ == "__main__":
    main(*sys.argv[1:3])
