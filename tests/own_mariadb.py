"""A throwaway MariaDB server of one test (or of the soak, ``deploy/soak/db_blips.py``), on
a free port, that the test may kill and restart without disturbing the shared server on
3307 that other test runs use.

It is ``deploy/mariadb/server.sh`` with ``EXPORT_CENTER_MARIADB_DIR`` and
``EXPORT_CENTER_MARIADB_PORT`` pointing at a fresh directory and port. Administration
(listing and killing the service's connections) goes through the root socket with the
``mariadb`` client, so it never passes through the service's own pool.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import trio

SERVER_SH = Path(__file__).resolve().parent.parent / "deploy" / "mariadb" / "server.sh"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OwnMariaDB:
    """Start with ``start()``; always ``close()`` (stops the server, removes its files).

    Args:
        database: the database the service uses (created by ``export-center migrate``).
    """

    def __init__(self, database: str) -> None:
        # Short path: a unix socket path must fit in 107 bytes.
        self.dir = Path(tempfile.mkdtemp(prefix="ec-mdb-"))
        self.port = free_port()
        self.database = database
        self.env = {
            **os.environ,
            "EXPORT_CENTER_MARIADB_DIR": str(self.dir),
            "EXPORT_CENTER_MARIADB_PORT": str(self.port),
            "PATH": os.environ.get("PATH", "") + ":/usr/sbin",
        }
        self.client = shutil.which("mariadb", path=self.env["PATH"]) or "mariadb"

    @property
    def url(self) -> str:
        return f"mysql://export_center:export_center@127.0.0.1:{self.port}/{self.database}"

    def start(self) -> None:
        subprocess.run(
            [str(SERVER_SH), "start"], env=self.env, check=True, capture_output=True, timeout=120
        )

    async def restart(self, down_seconds: float) -> float:
        """Stop the server (as an operator's restart would), stay down ``down_seconds``,
        start it again. Returns the seconds it was unreachable, by the test's clock."""
        started = trio.current_time()
        await trio.run_process([str(SERVER_SH), "stop"], env=self.env, capture_stdout=True)
        await trio.sleep(down_seconds)
        await trio.run_process(
            [str(SERVER_SH), "start"], env=self.env, capture_stdout=True, capture_stderr=True
        )
        return trio.current_time() - started

    async def sql(self, statement: str) -> str:
        """Run ``statement`` as root over the server's socket; stdout, tab-separated."""
        result = await trio.run_process(
            [
                self.client,
                "--no-defaults",
                f"--socket={self.dir / 'mysqld.sock'}",
                "-uroot",
                "-N",
                "-B",
                "-e",
                statement,
            ],
            env=self.env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        return result.stdout.decode()

    async def rows(self, statement: str) -> list[list[str]]:
        """Run ``statement`` as :meth:`sql` does; its rows, each a list of its fields."""
        return [line.split("\t") for line in (await self.sql(statement)).splitlines() if line]

    async def service_connections(self) -> list[int]:
        """Ids of the connections whose default database is the service's (only ours:
        the filter keeps an admin from ever killing anyone else's)."""
        out = await self.sql(
            "SELECT ID FROM information_schema.PROCESSLIST "
            f"WHERE DB = '{self.database}' AND ID <> CONNECTION_ID()"
        )
        return [int(line) for line in out.split() if line.strip().isdigit()]

    async def kill(self, connection_id: int) -> None:
        await self.sql(f"KILL CONNECTION {int(connection_id)}")

    def close(self) -> None:
        subprocess.run([str(SERVER_SH), "stop"], env=self.env, capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)
