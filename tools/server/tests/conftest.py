"""Fixtures: the real server, started on a free loopback port in a subprocess."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server_support import HISTORY_DEPTH, Server


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The shared admin-enabled server. Tests isolate themselves by using fresh account keys."""
    db = tmp_path_factory.mktemp("server") / "geofences.sqlite"
    srv = Server(["--enable-admin", "--history-depth", str(HISTORY_DEPTH)], db)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server without --enable-admin, started with a CSV import of data/places."""
    db = tmp_path_factory.mktemp("plain") / "geofences.sqlite"
    srv = Server(["--key", "hawaii", "--import", "data/places/osm_places_hawaii.csv",
                  "--radius", "1500"], db)
    yield srv
    srv.stop()
