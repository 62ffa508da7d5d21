"""A PostgreSQL instance of the soak's own: ``initdb`` in a temporary folder, its own port and socket folder,
never the machine's shared server. The faults stop it, start it again and make it slow (every process of the
cluster stopped with SIGSTOP, then continued)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """One PostgreSQL cluster under ``root`` (run as the ``postgres`` system user when this process is root)."""

    def __init__(self, root: Path) -> None:
        self.bin = _binaries()
        self.root = root
        self.data = root / "pgdata"
        self.port = _free_port()
        self._user = "postgres" if os.geteuid() == 0 else None

    @staticmethod
    def available() -> tuple[bool, str]:
        if _binaries() is None:
            return False, "no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql"
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                return False, "running as root without a postgres system user to run initdb as"
        return True, ""

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://docqa@127.0.0.1:{self.port}/docqa"

    def _run(self, *args: str) -> None:
        assert self.bin is not None
        command = [str(self.bin / args[0]), *args[1:]]
        if self._user:
            command = ["runuser", "-u", self._user, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def create(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self._user:
            shutil.chown(self.root, self._user, self._user)
            parent = self.root.parent  # a private temporary folder: the postgres user must be able to pass through
            parent.chmod(parent.stat().st_mode | 0o111)
        self._run("initdb", "-D", str(self.data), "-U", "docqa", "--auth=trust", "-E", "UTF8")
        self.start()
        assert self.bin is not None
        command = [str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "docqa", "docqa"]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-w", "-t", "60", "-l", str(self.root / "pg.log"), "start"
        )

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def _pids(self) -> list[int]:
        pid_file = self.data / "postmaster.pid"
        try:
            postmaster = int(pid_file.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return []
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
        return [postmaster, *(int(c) for c in children)]

    def pause(self) -> None:
        for pid in self._pids():
            os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in self._pids():
            os.kill(pid, signal.SIGCONT)

    def destroy(self) -> None:
        try:
            self.resume()
            self.stop()
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
            pass
        time.sleep(0.2)
        shutil.rmtree(self.root, ignore_errors=True)
