"""The `gpufleet ...` commands in the fenced code blocks of README.md and docs/*.md run as written.

Users copy these commands and trust them, so each one runs in-process (typer's CliRunner, as tests/cli does)
in a scratch folder that holds stand-ins for the files the docs name (``workload.yaml``: a shipped example
workload, ``FLEET.yaml``: the assessment platform, ``dcgm.prom``: the seeded telemetry example, ...), with
``GPUFLEET_DATA_DIR`` pointed into it. A command must exit 0 with no traceback, unless its comment says
``exits N``: ``exits 2`` (an example of a user error) must exit 2 with an error message and no traceback;
``exits 3``-``6`` (an answer "no": gpufleet.cli.exit_codes) must exit with that code, after its output.
Commands that need the network or take more than ~2 s are listed in :data:`NOT_RUN` with the reason; an
entry there that no longer matches a documented command fails, as does a documented command whose file
the scratch folder does not provide. Synopsis lines (``[--gpu ID]``, ``a|b``, ``...``) are not run, but each
option they name must exist on their command, as must each option of a `gpufleet CMD ...` code span in the
running text. Runs in ~15 s on two shared cores.
"""

from __future__ import annotations

import re
import runpy
import shlex
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app, full_command

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
DOC_FILES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SHELL_LANGS = {"", "sh", "bash", "console", "shell"}
EXIT_2_MARK = "exits 2"
SIZE_CLASSES = {"SMALL", "MEDIUM", "LARGE", "MASSIVE"}  # model names, not placeholders

#: documented commands (text after the comment is removed) that are not run here, and why
NOT_RUN: dict[str, str] = {
    "gpufleet catalog update --provider azure --region eastus": "needs the network (a live price API)",
    "gpufleet simulate autoscale azure_conv.csv --model llama-3.1-8b --gpu L4 --policy kpa": (
        "~2.5 s with its static-peak bisection; tests/simulate runs autoscale on the same trace"
    ),
    "gpufleet simulate sweep sweep.yaml": "starts worker processes (~2 s); tests/simulate/test_sweep.py",
    "gpufleet scenarios run-set basic_demos -f html -o gpufleet-report.html": (
        "~2.5 s (fine_tuning_medium_p5's layout search); `make demo` runs it"
    ),
    "gpufleet scenarios run-set cost_optimization_focus --format markdown": (
        "~2 s (three scenarios); tests/cli/test_scenarios_cli.py runs scenario sets"
    ),
    "gpufleet telemetry findings --prometheus http://prometheus:9090 --lookback 14 --format markdown": (
        "needs a Prometheus server; tests/telemetry/test_promql_pushdown.py runs it against a real one"
    ),
    "gpufleet plan examples/fleets/multicloud.yaml -f html -o plan.html": (
        "~2.5 s (MILP with savings by lever); tests/fleet/test_cli_fleet.py covers -f html"
    ),
}

HF_CONFIG = (
    '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, '
    '"intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, '
    '"num_hidden_layers": 32, '
    '"vocab_size": 128256, "max_position_embeddings": 131072, "rope_theta": 500000.0, '
    '"tie_word_embeddings": false, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-05, "hidden_act": "silu"}\n'
)
COMMITMENTS = (
    "commitments:\n  - {provider: aws, program: reserved, term_years: 1, discount_fraction: 0.3, "
    "source: our quote}\n"
)
SPOT_CSV = (
    "provider,mean_time_between_interruptions_h,notice_s,restart_overhead_s,checkpoint_cost_s,max_runtime_h,"
    "verified,source\n*,4,30,600,300,,no,test\n"
)
#: file named in the docs -> a shipped stand-in (a path under the repository) or its text
STAND_INS: dict[str, str | Path] = {
    "my-negotiated-prices.yaml": DATA / "user_catalogs" / "onprem.yaml",
    "my-catalog.yaml": DATA / "user_catalogs" / "onprem.yaml",
    "my_catalog.yaml": DATA / "user_catalogs" / "onprem.yaml",
    "gpu_instances.json": DATA / "user_catalogs" / "gpu_instances.json",
    "workload.yaml": DATA / "workloads" / "inference.yaml",
    "workloads.json": DATA / "workloads" / "gfo_workloads.json",
    "my-discounts.yaml": COMMITMENTS,
    "commitments.yaml": COMMITMENTS,
    "spot.csv": SPOT_CSV,
    "config.json": HF_CONFIG,
    "FLEET.yaml": ROOT / "examples" / "fleets" / "assessment-platform.yaml",
    "my-cases.csv": DATA / "cases" / "small.csv",
    "my_cases.csv": DATA / "cases" / "small.csv",
    "probe_cases.csv": DATA / "cases" / "small.csv",
    "my_profile.json": ROOT / "src" / "gpufleet" / "estimate" / "data" / "profile.json",
    "jobs.csv": DATA / "simulate" / "jobs.csv",
    "fleet.yaml": DATA / "simulate" / "fleet.yaml",
    "sweep.yaml": DATA / "simulate" / "sweep.yaml",
}


@dataclass(frozen=True)
class DocCommand:
    where: str  # file:line
    text: str  # the command as documented, comment removed
    comment: str

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text)[1:]

    @property
    def synopsis(self) -> bool:
        """A usage line (`[--opt X]`, `a|b`, `...`, a placeholder such as TRACE), not a command to run."""
        placeholder = any(re.fullmatch(r"[A-Z][A-Z_]*", w) and w not in SIZE_CLASSES for w in self.argv)
        return placeholder or bool(re.search(r"\[|\||\.\.\.", self.text))


def _split_comment(line: str) -> tuple[str, str]:
    """``line`` without its shell comment (a ``#`` that starts a word outside quotes), and the comment."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def doc_commands(path: Path) -> Iterator[DocCommand]:
    """Every ``gpufleet`` command in ``path``'s shell-like fenced blocks (``$ `` prompts, ``\\`` line
    continuations and ``&&`` chains handled; other programs in a chain are left out)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    lang: str | None = None
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("```"):
            lang = stripped[3:].strip() if lang is None else None
            i += 1
            continue
        start = i
        if lang in SHELL_LANGS:
            text = stripped.removeprefix("$ ")
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1].rstrip() + " " + lines[i].strip()
            while text.startswith("gpufleet ") and "[" in text and i + 1 < len(lines):
                if not lines[i + 1].strip().startswith("["):  # a synopsis wrapped over indented lines
                    break
                i += 1
                text += " " + lines[i].strip()
            command, comment = _split_comment(text)
            for part in command.split("&&"):
                part = " ".join(part.split())
                if part.startswith("gpufleet "):
                    yield DocCommand(f"{path.relative_to(ROOT)}:{start + 1}", part, comment)
        i += 1


ALL = [c for f in DOC_FILES for c in doc_commands(f)]


def _options() -> dict[str, set[str]]:
    try:
        import typer._click as click  # typer >= 0.26 vendors click
    except ImportError:  # pragma: no cover
        import click  # type: ignore[no-redef]
    out: dict[str, set[str]] = {}

    def walk(cmd: object, path: tuple[str, ...]) -> None:
        if hasattr(cmd, "list_commands"):
            ctx = click.Context(cmd)  # type: ignore[arg-type]
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), (*path, name))  # type: ignore[attr-defined]
        else:
            params = getattr(cmd, "params", [])
            out[" ".join(path)] = {o for p in params for o in (*p.opts, *getattr(p, "secondary_opts", ()))}

    walk(full_command(), ())
    return out


def _command_name(words: list[str], options: dict[str, set[str]]) -> str:
    for n in (2, 1):
        name = " ".join(words[:n])
        if name in options:
            return name
    raise AssertionError(f"no gpufleet command {' '.join(words[:2])!r}")


@pytest.fixture(scope="module")
def scratch_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a stand-in for every file the documented commands read."""
    tmp = tmp_path_factory.mktemp("docs-scratch")
    for name, src in STAND_INS.items():
        if isinstance(src, Path):
            shutil.copyfile(src, tmp / name)
        else:
            (tmp / name).write_text(src, encoding="utf-8")
    (tmp / "examples").symlink_to(ROOT / "examples")
    (tmp / "src").symlink_to(ROOT / "src")
    trace = (DATA / "traces" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv").read_text()
    (tmp / "azure_conv.csv").write_text("\n".join(trace.splitlines()[:2001]) + "\n", encoding="utf-8")
    argv = sys.argv
    try:  # the seeded telemetry example docs/telemetry.md starts from (ex/dcgm.prom, ...), 2 days of it
        sys.argv = ["make_telemetry_example.py", str(tmp / "ex"), "--days", "2"]
        runpy.run_path(str(ROOT / "tools" / "make_telemetry_example.py"), run_name="__main__")
    finally:
        sys.argv = argv
    for name in ("dcgm.prom", "node-smi.csv", "inventory.yaml"):
        shutil.copyfile(tmp / "ex" / name, tmp / name)
    return tmp


def test_the_docs_have_commands_and_not_run_entries_are_current() -> None:
    assert len([c for c in ALL if c.where.startswith("README.md")]) >= 30
    documented = {c.text for c in ALL}
    stale = sorted(set(NOT_RUN) - documented)
    assert not stale, f"NOT_RUN names commands the docs no longer show: {stale}"


def test_synopsis_lines_name_existing_options() -> None:
    options = _options()
    bad = []
    for c in ALL:
        words = c.argv
        name = _command_name(words, options)
        for opt in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", " ".join(words[len(name.split()) :])):
            if opt not in options[name]:
                bad.append(f"{c.where}: `gpufleet {name}` has no {opt}: {c.text}")
    assert not bad, "\n".join(bad)


#: options the docs name on purpose although no command has them (a usage-error timing row in the README)
INLINE_BAD_OPTIONS_ON_PURPOSE = {"--bogus"}


def test_inline_commands_name_existing_options() -> None:
    """`gpufleet CMD --opt ...` in running text (code spans) names options CMD has."""
    options = _options()
    bad = []
    for path in DOC_FILES:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for span in re.findall(r"`(gpufleet [^`]+)`", line):
                words = span.split()[1:]
                try:
                    name = _command_name(words, options)
                except AssertionError:  # a group (`gpufleet telemetry`) or `gpufleet --version`
                    continue
                for opt in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", " ".join(words[len(name.split()) :])):
                    if opt not in options[name] and opt not in INLINE_BAD_OPTIONS_ON_PURPOSE | {"--help"}:
                        bad.append(f"{path.relative_to(ROOT)}:{n}: `gpufleet {name}` has no {opt}: {span}")
    assert not bad, "\n".join(bad)


RUNNABLE_DOCS = [f for f in DOC_FILES if any(not c.synopsis for c in doc_commands(f))]


@pytest.mark.parametrize("doc", RUNNABLE_DOCS, ids=lambda p: p.name)
def test_documented_commands_run(
    doc: Path, scratch_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each document's commands in order, in a scratch folder of its own (later commands read what earlier
    ones wrote, e.g. a telemetry store)."""
    shutil.copytree(scratch_template, tmp_path, symlinks=True, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()
    failures = []
    ran = 0
    for c in doc_commands(doc):
        if c.synopsis or c.text in NOT_RUN:
            continue
        missing = [
            w
            for w in c.argv
            if re.fullmatch(r"[\w./-]+\.(yaml|yml|json|csv|prom)", w) and not Path(w).exists()
        ]
        outputs = {c.argv[i + 1] for i, w in enumerate(c.argv[:-1]) if w in ("-o", "--output")}
        missing = [w for w in missing if w not in outputs]
        if missing:
            failures.append(f"{c.where}: no stand-in for {missing} (add it to STAND_INS): {c.text}")
            continue
        r = runner.invoke(app, c.argv)
        ran += 1
        mark = re.search(r"exits ([2-9])\b", c.comment)  # exits 2: user error; 3-6: an answer "no"
        want = int(mark.group(1)) if mark else 0
        crashed = r.exception is not None and not isinstance(r.exception, SystemExit)
        if r.exit_code != want or crashed or "Traceback" in r.output:
            failures.append(f"{c.where}: exit {r.exit_code} (want {want}): {c.text}\n{r.output[-800:]}")
        elif want == 2 and "Error" not in r.output:
            failures.append(f"{c.where}: exit 2 without an error message: {c.text}")
    assert not failures, "\n\n".join(failures)
    assert ran > 0
