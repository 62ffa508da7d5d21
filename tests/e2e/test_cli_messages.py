"""The CLI speaks clearly: help with examples, errors that name the real problem, progress for long work."""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from service.api.cli.parser import build_parser
from tests.e2e.test_cli import run as cli_run

ROOT = Path(__file__).resolve().parents[2]
DOCQA = [sys.executable, "-m", "service.api.cli"]


def _env(data_dir: Path) -> dict[str, str]:
    env = {**os.environ, "DOCQA_DATA_DIR": str(data_dir)}
    env.pop("DOCQA_CONFIG", None)
    return env


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_run(data_dir, *args, check=False)  # the CLI suite's helper: never a traceback


def _leaf_parsers(parser: argparse.ArgumentParser, name: str = "docqa") -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        return [(name, parser)]
    for action in subparsers:
        for child, sub in action.choices.items():
            found.extend(_leaf_parsers(sub, f"{name} {child}"))
    return found


def test_every_option_has_help_and_every_command_an_example() -> None:
    commands = _leaf_parsers(build_parser())
    assert len(commands) >= 14
    for name, parser in commands:
        assert parser.epilog and "examples:" in parser.epilog, name
        assert name.split()[1] in parser.epilog, name  # the example runs this very command
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name}: {action.dest} has no help text"


def test_top_level_help_documents_every_exit_code() -> None:
    text = build_parser().format_help()
    for code in (0, 1, 2, 3, 4, 5, 6, 7, 8, 70, 130, 141):
        assert re.search(rf"^\s+{code}\s", text, re.MULTILINE) or f"; {code} " in text, code


def test_index_of_a_missing_folder_says_so_before_any_work(tmp_path: Path) -> None:
    result = run(tmp_path / "data", "index", str(tmp_path / "nonexistent"), "--store", "s")
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: folder {tmp_path / 'nonexistent'} does not exist"
    assert run(tmp_path / "data", "stores").stdout.startswith("no stores yet")  # nothing was created
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    result = run(tmp_path / "data", "index", str(a_file), "--store", "s")
    assert result.returncode == 2 and "is not a folder" in result.stderr


def test_out_of_range_chunk_counts_name_the_option(tmp_path: Path) -> None:
    result = run(tmp_path, "search", "anything", "--store", "acme", "--as", "alice", "--k", "100000")
    assert result.returncode == 2 and "--k must be between 1 and 100" in result.stderr
    assert "max_chunks" not in result.stderr
    result = run(tmp_path, "ask", "anything", "--store", "acme", "--as", "alice", "--max-chunks", "0")
    assert result.returncode == 2 and "--max-chunks must be between 1 and 100" in result.stderr


def _into_closed_pipe(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run with stdout a pipe whose reader is gone before the first byte (as `| head -0` leaves it)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*DOCQA, *args], stdout=write_end, stderr=subprocess.PIPE, text=True, env=_env(data_dir), timeout=60
        )
    finally:
        os.close(write_end)


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    # argparse's --help writes and exits on its own; a command goes through main().
    assert "Traceback" not in _into_closed_pipe(tmp_path, "--help").stderr
    result = _into_closed_pipe(tmp_path, "stores")
    assert result.stderr == "" and result.returncode == 141


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("corpus") / "acme"
    shutil.copytree(ROOT / "examples" / "acme", target)
    (target / "handbook" / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    return target


def test_progress_goes_to_the_log_when_not_on_a_terminal(tmp_path: Path, corpus: Path) -> None:
    result = run(tmp_path, "index", str(corpus), "--store", "acme", "--progress-every", "0")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "docqa.progress" in line]
    assert lines, result.stderr
    assert re.search(r"\d+/8 files, \d+ chunks, [\d.]+ chunks/s", lines[0])
    assert re.search(r"8/8 files, \d+ chunks, .* \(done\)$", lines[-1])
    assert any("ETA" in line for line in lines)
    assert "\r" not in result.stderr  # no bar drawn into a log
    # pypdf's own warning is a log line, and the file is named once in the summary.
    assert any("EOF marker not found" in line and "WARNING" in line for line in result.stderr.splitlines())
    assert "skipped handbook/broken.pdf" in result.stderr
    quiet = run(tmp_path, "index", str(corpus), "--store", "acme", "--quiet")
    assert "docqa.progress" not in quiet.stderr


def test_on_a_terminal_the_bar_counts_chunks_and_warnings_stay_out_of_it(tmp_path: Path, corpus: Path) -> None:
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))  # a terminal of 200 columns
    process = subprocess.Popen(
        [*DOCQA, "index", str(corpus), "--store", "acme"],
        stdin=child,
        stdout=subprocess.DEVNULL,
        stderr=child,
        env=_env(tmp_path),
        cwd=ROOT,
    )
    os.close(child)
    screen = b""
    while True:
        try:
            data = os.read(parent, 65536)
        except OSError:
            break
        if not data:
            break
        screen += data
    process.wait(timeout=300)
    os.close(parent)
    text = screen.decode(errors="replace")
    assert process.returncode == 0, text
    assert "Traceback" not in text
    assert re.search(r"indexing .*8/8 .*\d+ chunks, [\d.]+ chunks/s", text), text
    # The warning is written on a line of its own, the bar redrawn after it.
    segments = re.split(r"[\r\n]+", text)
    warning = [s for s in segments if "EOF marker not found" in s]
    assert warning and all("indexing" not in s for s in warning), warning


def test_a_bad_shard_is_one_line_before_anything_is_opened(tmp_path: Path) -> None:
    folder = str(ROOT / "examples" / "acme")
    for value, words in (
        ("3/2", "--shard 3/2: there is no shard 3: shards of 2 are 0 to 1"),
        ("x", "--shard x: expected I/N"),
        ("1/0", "--shard 1/0: the number of shards must be between 1"),
        ("-1/2", "--shard -1/2: expected I/N"),
        ("1/", "--shard 1/: expected I/N"),
    ):
        result = run(tmp_path / "data", "index", folder, "--store", "s", f"--shard={value}", "--quiet")
        assert result.returncode == 2, (value, result.stderr)
        assert result.stderr.startswith(f"error: {words}") and result.stderr.count("\n") == 1, result.stderr
    assert run(tmp_path / "data", "stores").stdout.startswith("no stores yet")  # nothing was created
    assert not (tmp_path / "data" / "index" / "s.sqlite").exists()
