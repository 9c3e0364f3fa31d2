"""The Dockerfile, compose.yaml and deploy/prometheus.yml checked statically against the code (no container
runtime here): every path the Dockerfile copies exists, its ENTRYPOINT is a `gpufleet serve` invocation the
real Typer app parses and the service accepts, the compose services' environment and flags are settings the
service reads, the database URL is one `--db` accepts pointing at the compose PostgreSQL, and Prometheus
scrapes /metrics on the port the service listens on. Each check is also shown failing on a broken file."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer._click.core import Command  # typer >= 0.26 vendors click (as src/gpufleet/cli does)
from typer._click.exceptions import ClickException, UsageError
from typer.core import TyperGroup

from .fixtures import Env

ROOT = Path(__file__).resolve().parents[2]


# --- reading the files --------------------------------------------------------------------------------------
def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def exec_form(args: str) -> list[str]:
    """The words of an ENTRYPOINT/CMD (JSON exec form, else shell words)."""
    return list(json.loads(args)) if args.startswith("[") else shlex.split(args)


def parse_gpufleet(argv: list[str]) -> tuple[str, dict[str, Any]]:
    """(subcommand, its parsed parameters) of ``gpufleet ARGS...`` parsed by the real CLI, without running
    it (click's own parsing: unknown flags, bad values and ranges raise :class:`UsageError`)."""
    if not argv or argv[0] != "gpufleet":
        raise UsageError(f"the command is {argv[:1]}, not the gpufleet executable")
    from gpufleet.cli.app import full_command

    group = full_command()
    args = list(argv[1:])
    # the root's own options end at the subcommand's name (the root parses interspersed options, so it is
    # given only what precedes the subcommand)
    at = next((k for k, a in enumerate(args) if not a.startswith("-")), len(args))
    ctx = group.make_context("gpufleet", args[: at + 1], resilient_parsing=False)
    name, cmd, _ = group.resolve_command(ctx, args[at : at + 1])
    assert name is not None and cmd is not None
    sub = cmd.make_context(name, args[at + 1 :], parent=ctx, resilient_parsing=False)
    if isinstance(cmd, TyperGroup) and sub.args:
        raise UsageError(f"`gpufleet {name}` is given a subcommand {sub.args}")
    return name, dict(sub.params)


def env_vars_read() -> set[str]:
    """Environment variables the code reads: the CLI options' ``envvar`` and ``os.environ`` reads of src."""
    from gpufleet.cli.app import full_command

    names: set[str] = set()
    group = full_command()

    def walk(cmd: Command) -> None:
        for p in cmd.params:
            env = getattr(p, "envvar", None)
            names.update([env] if isinstance(env, str) else list(env or []))
        if isinstance(cmd, TyperGroup):
            for sub in cmd.commands.values():
                walk(sub)

    walk(group)
    pattern = re.compile(r"environ(?:\.get)?\(?\[?\s*\"([A-Z][A-Z0-9_]+)\"")
    for path in (ROOT / "src").rglob("*.py"):
        names.update(pattern.findall(path.read_text(encoding="utf-8")))
    return names


# --- the checks (each returns the problems it finds) --------------------------------------------------------
def dockerfile_problems(text: str, root: Path) -> list[str]:
    from gpufleet.service.settings import check_bind

    problems: list[str] = []
    ins = dockerfile_instructions(text)
    for word, args in ins:
        if word in ("COPY", "ADD"):
            parts = [p for p in shlex.split(args) if not p.startswith("--")]
            if any(p.startswith("--from") for p in shlex.split(args)):
                continue
            for src in parts[:-1]:
                if not (root / src).exists():
                    problems.append(f"{word} {src}: no such path in the repository")
    entry = [a for w, a in ins if w == "ENTRYPOINT"]
    cmd = [a for w, a in ins if w == "CMD"]
    if len(entry) != 1:
        return [*problems, f"{len(entry)} ENTRYPOINT instructions (want 1)"]
    argv = exec_form(entry[0]) + (exec_form(cmd[-1]) if cmd else [])
    try:
        name, params = parse_gpufleet(argv)
    except ClickException as exc:
        return [*problems, f"ENTRYPOINT {argv}: {exc.format_message()}"]
    if name != "serve":
        return [*problems, f"ENTRYPOINT runs `gpufleet {name}`, not `gpufleet serve`"]
    try:
        check_bind(params["host"], public=params["public"])
    except Exception as exc:
        problems.append(f"ENTRYPOINT: the service refuses its bind: {exc}")
    exposed = [int(p.split("/")[0]) for w, a in ins if w == "EXPOSE" for p in a.split()]
    if exposed != [params["port"]]:
        problems.append(f"EXPOSE {exposed} but the service listens on {params['port']}")
    for w, a in ins:
        if w == "HEALTHCHECK":
            m = re.search(r"http://127\.0\.0\.1:(\d+)(/\w+)", a)
            if m is None or int(m.group(1)) != params["port"] or m.group(2) not in ("/readyz", "/healthz"):
                problems.append(f"HEALTHCHECK does not ask /readyz or /healthz on port {params['port']}: {a}")
        if w == "RUN" and "pip install" in a:
            extras = re.findall(r"\.\[([a-z,]+)\]", a)
            declared = tomllib.loads((root / "pyproject.toml").read_text())["project"][
                "optional-dependencies"
            ]
            for extra in (e for group in extras for e in group.split(",")):
                if extra not in declared:
                    problems.append(f"pip install .[{extra}]: pyproject.toml has no such extra")
        if w == "ENV":
            for key, value in re.findall(r"(\w+)=(\S+)", a):
                if key.startswith("GPUFLEET_") and key not in env_vars_read():
                    problems.append(f"ENV {key}: the code reads no such variable")
                if key == "GPUFLEET_DATA_DIR" and not value.startswith("/"):
                    problems.append(f"ENV GPUFLEET_DATA_DIR={value}: must be absolute")
    return problems


def _service_argv(compose: dict[str, Any], dockerfile: str) -> list[str]:
    svc = compose["services"]["gpufleet"]
    entry = next(a for w, a in dockerfile_instructions(dockerfile) if w == "ENTRYPOINT")
    argv = exec_form(entry)
    if "entrypoint" in svc:
        e = svc["entrypoint"]
        argv = list(e) if isinstance(e, list) else shlex.split(e)
    if "command" in svc:
        c = svc["command"]
        argv += list(c) if isinstance(c, list) else shlex.split(c)
    return argv


def compose_problems(
    compose: dict[str, Any], dockerfile: str, prometheus: dict[str, Any], root: Path
) -> list[str]:
    from sqlalchemy.engine import make_url

    from gpufleet.service.settings import db_url_from

    problems: list[str] = []
    services = compose.get("services", {})
    svc = services.get("gpufleet")
    if svc is None:
        return ["no gpufleet service"]
    build = svc.get("build")
    context = build if isinstance(build, str) else (build or {}).get("context", ".")
    if not (root / context / "Dockerfile").exists():
        problems.append(f"build: {context} has no Dockerfile")
    try:
        name, params = parse_gpufleet(_service_argv(compose, dockerfile))
        if name != "serve":
            problems.append(f"the service runs `gpufleet {name}`")
    except ClickException as exc:
        return [*problems, f"the service's command: {exc.format_message()}"]
    env = svc.get("environment") or {}
    env = dict(e.split("=", 1) for e in env) if isinstance(env, list) else env
    read = env_vars_read()
    for key in env:
        if key not in read:
            problems.append(f"environment {key}: the service reads no such variable")
    db = env.get("GPUFLEET_DB")
    if db is not None:
        url = make_url(db_url_from(str(db)))
        pg = services.get(url.host or "", {})
        pg_env = pg.get("environment") or {}
        if not pg:
            problems.append(f"GPUFLEET_DB host {url.host!r} is not a compose service")
        elif (url.username, url.password, url.database) != (
            pg_env.get("POSTGRES_USER"),
            pg_env.get("POSTGRES_PASSWORD"),
            pg_env.get("POSTGRES_DB"),
        ):
            problems.append("GPUFLEET_DB user, password or database differ from the postgres service's")
        if url.port not in (None, 5432):
            problems.append(f"GPUFLEET_DB port {url.port}: PostgreSQL listens on 5432 in its container")
        cond = (svc.get("depends_on") or {}).get(url.host, {})
        if cond.get("condition") != "service_healthy" or "healthcheck" not in pg:
            problems.append("the service does not wait for a healthy database (depends_on service_healthy)")
    ports = [str(p) for p in svc.get("ports", [])]
    if not any(p.rsplit(":", 1)[-1] == str(params["port"]) for p in ports):
        problems.append(f"ports {ports} publish no container port {params['port']}")
    for p in ports:
        if p.count(":") < 2 or not p.startswith("127.0.0.1:"):
            problems.append(f"ports {p}: publish on the host's loopback (127.0.0.1:...)")
    prom = services.get("prometheus")
    if prom is None:
        return [*problems, "no prometheus service"]
    for vol in prom.get("volumes", []):
        src = str(vol).split(":", 1)[0]
        if src.startswith(".") and not (root / src).exists():
            problems.append(f"prometheus volume {src}: no such file")
    jobs = prometheus.get("scrape_configs") or []
    scraped = False
    for job in jobs:
        for sc in job.get("static_configs", []):
            for target in sc.get("targets", []):
                host, _, port = str(target).rpartition(":")
                if host == "gpufleet":
                    scraped = True
                    if job.get("metrics_path", "/metrics") != "/metrics":
                        problems.append(f"Prometheus scrapes {job.get('metrics_path')}, not /metrics")
                    if port != str(params["port"]):
                        problems.append(
                            f"Prometheus scrapes port {port}; the service listens on {params['port']}"
                        )
    if not scraped:
        problems.append("Prometheus scrapes no target on the gpufleet service")
    return problems


def _files() -> tuple[str, dict[str, Any], dict[str, Any]]:
    return (
        (ROOT / "Dockerfile").read_text(),
        yaml.safe_load((ROOT / "compose.yaml").read_text()),
        yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text()),
    )


# --- tests --------------------------------------------------------------------------------------------------
def test_the_shipped_files_agree_with_the_code() -> None:
    dockerfile, compose, prometheus = _files()
    assert dockerfile_problems(dockerfile, ROOT) == []
    assert compose_problems(compose, dockerfile, prometheus, ROOT) == []
    name, params = parse_gpufleet(
        exec_form(next(a for w, a in dockerfile_instructions(dockerfile) if w == "ENTRYPOINT"))
    )
    assert (name, params["host"], params["public"], params["port"]) == ("serve", "0.0.0.0", True, 8642)


def test_the_metrics_and_health_routes_the_files_name_exist(env: Env) -> None:
    r = env.client.get("/metrics")
    assert r.status_code == 200 and "gpufleet_http_requests_total" in r.text
    assert env.client.get("/readyz").status_code == 200


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("COPY src ./src", "COPY srcs ./src", "COPY srcs: no such path"),
        ('"--port", "8642"]', '"--port", "86420"]', "ENTRYPOINT"),
        ('"--public", ', "", "the service refuses its bind"),
        ('"serve",', '"serv",', "ENTRYPOINT"),
        ('"--port", "8642"]', '"--port", "8642", "--workers", "4"]', "No such option: --workers"),
        ("EXPOSE 8642", "EXPOSE 8000", "EXPOSE [8000]"),
        ("'.[service]'", "'.[server]'", "no such extra"),
        ("/readyz", "/ready", "HEALTHCHECK"),
        ("GPUFLEET_DATA_DIR=/data", "GPUFLEET_DATA=/data", "ENV GPUFLEET_DATA"),
    ],
)
def test_a_broken_dockerfile_is_caught(old: str, new: str, says: str) -> None:
    dockerfile, _, _ = _files()
    assert old in dockerfile
    problems = dockerfile_problems(dockerfile.replace(old, new), ROOT)
    assert any(says in p for p in problems), problems


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            lambda c, p: c["services"]["gpufleet"]["environment"].update(GPUFLEET_DATABASE="x"),
            "GPUFLEET_DATABASE",
        ),
        (
            lambda c, p: c["services"]["gpufleet"]["environment"].update(
                GPUFLEET_DB="mysql://u:p@postgres/db"
            ),
            "not supported",
        ),
        (
            lambda c, p: c["services"]["gpufleet"]["environment"].update(
                GPUFLEET_DB="postgresql://gpufleet:wrong@postgres:5432/gpufleet"
            ),
            "differ from the postgres",
        ),
        (
            lambda c, p: c["services"]["gpufleet"]["environment"].update(
                GPUFLEET_DB="postgresql://gpufleet:gpufleet-change-me@db:5432/gpufleet"
            ),
            "not a compose service",
        ),
        (lambda c, p: c["services"]["gpufleet"].update(command=["--job-workers", "many"]), "command"),
        (
            lambda c, p: c["services"]["gpufleet"].update(command=["--host", "0.0.0.0", "--threads", "2"]),
            "command",
        ),
        (lambda c, p: c["services"]["gpufleet"].update(ports=["8642:8642"]), "loopback"),
        (
            lambda c, p: c["services"]["gpufleet"].update(ports=["127.0.0.1:8642:8000"]),
            "publish no container port",
        ),
        (lambda c, p: p["scrape_configs"][0].update(metrics_path="/prometheus"), "not /metrics"),
        (
            lambda c, p: p["scrape_configs"][0]["static_configs"][0].update(targets=["gpufleet:9090"]),
            "port 9090",
        ),
        (
            lambda c, p: p["scrape_configs"][0]["static_configs"][0].update(targets=["service:8642"]),
            "no target",
        ),
        (lambda c, p: c["services"]["gpufleet"]["depends_on"].pop("postgres"), "healthy database"),
    ],
)
def test_a_broken_compose_file_is_caught(change: Any, says: str) -> None:
    dockerfile, compose, prometheus = _files()
    change(compose, prometheus)
    try:
        problems = compose_problems(compose, dockerfile, prometheus, ROOT)
    except Exception as exc:  # a URL --db refuses raises its own one-paragraph error
        problems = [str(exc)]
    assert any(says in p for p in problems), problems


@pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool is not installed (tools/system-deps.sh)"
)
def test_promtool_accepts_the_prometheus_configuration() -> None:
    r = subprocess.run(
        ["promtool", "check", "config", "--syntax-only", str(ROOT / "deploy" / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
