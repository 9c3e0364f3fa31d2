"""A model named by path in a request never makes the server read that file (the CLI still reads it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufleet.errors import UnknownNameError
from gpufleet.models.registry import model_files_forbidden, resolve_model

from .fixtures import Env

_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    p = tmp_path / "secret-model" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps(_CONFIG))
    return p


def test_the_library_reads_a_config_path_outside_the_service(config_path: Path) -> None:
    assert resolve_model(str(config_path)).num_layers == 16
    with model_files_forbidden(), pytest.raises(UnknownNameError, match="does not read model config files"):
        resolve_model(str(config_path))
    assert resolve_model(str(config_path.parent)).num_layers == 16  # the block ended: allowed again


@pytest.mark.parametrize(
    "route, extra",
    [
        ("/api/v1/estimate/memory", {"gpu": "H100-SXM"}),
        ("/api/v1/estimate/infer", {"gpu": "H100-SXM"}),
        ("/api/v1/recommend", {"target_requests_per_s": 1}),
        ("/api/v1/regions", {"target_requests_per_s": 1}),
    ],
)
def test_a_model_path_over_http_is_a_404_not_a_file_read(
    env: Env, config_path: Path, route: str, extra: dict[str, object]
) -> None:
    for name in (str(config_path), str(config_path.parent), "/etc/passwd"):
        r = env.client.post(route, json={"model": name, **extra}, headers=env.h("a_viewer"))
        assert r.status_code == 404, r.text
        message = r.json()["error"]["message"]
        assert "does not read model config files" in message and "Traceback" not in message
    ok = env.client.post(route, json={"model": "llama-3.1-8b", **extra}, headers=env.h("a_viewer"))
    assert ok.status_code == 200, ok.text
