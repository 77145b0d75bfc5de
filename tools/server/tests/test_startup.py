"""Start-up: the server binds its port before it touches its database or says it is serving."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from server_support import REPO_ROOT, RUN


def test_a_port_in_use_is_exit_69_without_a_serving_line(tmp_path: Path) -> None:
    # An --import must not reach the database: it may be the one of a server already running
    # on that port.
    places = tmp_path / "one.csv"
    places.write_text("id,latitude,longitude\na,1,2\n")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run(
            [sys.executable, str(RUN), "--port", str(port), "--db", str(tmp_path / "s.db"),
             "--key", "k", "--import", str(places)],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 69, done.stderr
    assert "serving" not in done.stderr
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert "imported" not in done.stdout + done.stderr
    assert not (tmp_path / "s.db").exists()
