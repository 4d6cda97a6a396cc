"""Drive the real Claude Code CLI offline against :class:`FakeAnthropic` (test_claude_code_cli).

The CLI is the npm package ``@anthropic-ai/claude-code`` that ``.ci/run`` installs into
``.ci/claude-code/`` (git-ignored); ``CONTEXTKIT_CLAUDE_CLI`` names another binary. A
:class:`Lab` is one scratch folder: ``home/`` (the CLI's ``$HOME``: its transcripts land in
``home/.claude/projects/<cwd with / as ->/<session id>.jsonl``), ``work/`` (its working folder,
where scripted tool calls run) and, after :meth:`Lab.keep`, ``requests.jsonl``: every request the
fake server received (path, headers, body), so a failing run can be read afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from contextkit.testing.fake_anthropic import FakeAnthropic, ReceivedRequest

REPO = Path(__file__).resolve().parent.parent
CLI_ENV = "CONTEXTKIT_CLAUDE_CLI"
DEFAULT_CLI = REPO / ".ci" / "claude-code" / "node_modules" / ".bin" / "claude"
MODEL = "claude-sonnet-4-5"
TIMEOUT_S = 120
ARG_LIMIT = 100_000


def cli_path() -> Path:
    return Path(os.environ.get(CLI_ENV) or DEFAULT_CLI)


def cli_version(cli: Path) -> str:
    """The version the binary reports (``2.1.197 (Claude Code)`` -> ``2.1.197``)."""
    out = subprocess.run(
        [str(cli), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    return out.stdout.split()[0]


@dataclass
class Lab:
    """A scratch HOME and working folder for one scripted session."""

    root: Path
    cli: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def work(self) -> Path:
        return self.root / "work"

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)

    def env(self, server: FakeAnthropic, extra: Mapping[str, str]) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "TZ": "UTC",
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            **extra,
        }

    def prompt(
        self,
        server: FakeAnthropic,
        text: str,
        *,
        resume: bool = False,
        tools: Sequence[str] = ("Bash", "Read", "Edit"),
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
    ) -> str:
        """Run ``claude -p text`` (``--continue`` with ``resume``); its stdout. Fails loudly.

        A prompt over ``ARG_LIMIT`` characters goes through stdin (one argument of a process
        may not exceed 128 KiB on Linux)."""
        piped = len(text) > ARG_LIMIT
        command = [str(self.cli), "-p", *([] if piped else [text]), *args]
        command += ["--model", MODEL, "--allowedTools", ",".join(tools)]
        if resume:
            command.append("--continue")
        done = subprocess.run(
            command,
            cwd=self.work,
            env=self.env(server, env or {}),
            input=text if piped else None,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(
                f"claude exited {done.returncode}\nstdout: {done.stdout[-2000:]}\n"
                f"stderr: {done.stderr[-2000:]}"
            )
        return done.stdout

    def prompt_while_busy(
        self,
        server: FakeAnthropic,
        first: str,
        queued: str,
        gate: Path,
        *,
        tools: Sequence[str] = ("Bash",),
    ) -> None:
        """A stream-json session: ``first``, then ``queued`` while the scripted tool of the first
        reply waits for ``gate`` to exist; the gate opens once the CLI has queued the message (its
        transcript says so), so the message is delivered mid-turn, never by luck of timing."""
        command = [str(self.cli), "-p", "--input-format", "stream-json", "--output-format"]
        command += ["stream-json", "--verbose", "--model", MODEL, "--allowedTools", ",".join(tools)]
        with (self.root / "stream.out").open("w") as out:
            child = subprocess.Popen(
                command,
                cwd=self.work,
                env=self.env(server, {}),
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
            )
            assert child.stdin is not None
            try:
                child.stdin.write(_user_line(first))
                child.stdin.flush()
                _wait_for(lambda: len(server.requests) >= 1, "the first reply")
                child.stdin.write(_user_line(queued))
                child.stdin.flush()
                _wait_for(lambda: self._queued(queued), "the CLI to queue the second message")
                gate.touch()
                _wait_for(lambda: len(server.requests) >= 2, "the request after the tool")
                child.stdin.close()
                returncode = child.wait(timeout=TIMEOUT_S)
            finally:
                if child.poll() is None:
                    child.kill()
        if returncode != 0:
            raise AssertionError(
                f"claude exited {returncode}: {(self.root / 'stream.out').read_text()[-2000:]}"
            )

    def _queued(self, text: str) -> bool:
        """Whether the CLI has written the enqueue record of ``text``. Read while the CLI writes:
        a last line without its newline is still being written, and is not read yet."""
        for path in self.transcripts():
            for line in path.read_text().split("\n")[:-1]:
                record = json.loads(line) if line.strip() else {}
                if record.get("operation") == "enqueue" and record.get("content") == text:
                    return True
        return False

    def transcripts(self) -> list[Path]:
        """Every ``.jsonl`` the CLI wrote under ``home/.claude/projects`` (subagents included)."""
        return sorted((self.home / ".claude" / "projects").rglob("*.jsonl"))

    def main_transcript(self) -> Path:
        """The one main-session file (a subagent's files sit in ``<session>/subagents/``)."""
        found = [p for p in self.transcripts() if p.parent.name != "subagents"]
        assert len(found) == 1, f"expected one session file, found {found}"
        return found[0]

    def keep(self, server: FakeAnthropic) -> Path:
        """Write every request the server received to ``requests.jsonl``; its path."""
        out = self.root / "requests.jsonl"
        with out.open("w") as f:
            for r in (*server.requests, *server.other_requests):
                f.write(json.dumps(_record(r)) + "\n")
        keep_dir = os.environ.get("CONTEXTKIT_CLI_ARTIFACTS")
        if keep_dir:
            shutil.copytree(self.root, Path(keep_dir) / self.root.name, dirs_exist_ok=True)
        return out


def _user_line(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"


def _wait_for(done: Callable[[], bool], what: str, timeout_s: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _record(r: ReceivedRequest) -> dict[str, object]:
    body: object = r.raw
    with contextlib.suppress(json.JSONDecodeError):
        body = json.loads(r.raw)
    return {
        "index": r.index,
        "method": r.method,
        "path": r.path,
        "status": r.status,
        "error": r.error,
        "headers": dict(r.headers),
        "body": body,
        "response": json.loads(r.response) if r.response else None,
    }
