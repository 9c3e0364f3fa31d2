"""A throw-away PostgreSQL server for the tests, from the Debian package (tools/system-deps.sh installs it).

``initdb`` + ``pg_ctl`` in a temporary folder on a free port, trust authentication on 127.0.0.1 only, stopped
at the end of the session. PostgreSQL refuses to run as root: as root the server runs as the ``postgres``
user (``runuser``) in a folder that user owns. :func:`start` returns None with the reason when that cannot be
done; the tests then skip saying so.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class PgServer:
    bin_dir: Path
    data_dir: Path
    port: int
    user: str
    as_user: str | None  # the OS user the server runs as (None: this process's)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self.as_user:
            cmd = ["runuser", "-u", self.as_user, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)

    def stop(self) -> None:
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate", "stop")
        shutil.rmtree(self.data_dir.parent, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find_bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def start() -> tuple[PgServer | None, str]:
    """(a running server, "") or (None, why not)."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        return None, "PostgreSQL is not installed (initdb not found; tools/system-deps.sh installs it)"
    as_user = None
    root = Path(tempfile.mkdtemp(prefix="gpufleet-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return None, "running as root without runuser: cannot start PostgreSQL as another user"
        as_user = "postgres"
        try:
            import pwd

            pw = pwd.getpwnam(as_user)
        except KeyError:
            return None, "running as root and there is no 'postgres' user to run the server"
        os.chown(root, pw.pw_uid, pw.pw_gid)
    server = PgServer(bin_dir=bin_dir, data_dir=data, port=_free_port(), user="gpufleet", as_user=as_user)
    init = server._run(
        str(bin_dir / "initdb"), "-D", str(data), "-U", "gpufleet", "--auth=trust", "-E", "UTF8", "--no-sync"
    )
    if init.returncode != 0:
        return None, f"initdb failed: {init.stderr.strip()[-300:]}"
    opts = f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    started = server._run(
        str(bin_dir / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        opts,
        "-l",
        str(root / "log"),
        "-w",
        "-t",
        "60",
        "start",
    )
    if started.returncode != 0:
        log = (root / "log").read_text(errors="replace")[-300:] if (root / "log").exists() else ""
        return None, f"pg_ctl start failed: {started.stderr.strip()[-200:]} {log}"
    return server, ""
