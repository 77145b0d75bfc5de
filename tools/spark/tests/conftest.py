"""Shared fixtures of the Spark job's tests: one local Spark session for all of them, the
geofence binary, the fleet input and the single-process `geofence stream` run to compare with."""

import importlib.machinery
import importlib.util
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fleet  # noqa: E402

ROOT = fleet.ROOT
RUN_JOB = os.path.join(ROOT, "tools", "spark", "run-job")

# The README's headline sets: 144,563 towns in 1.5 km circles, 28,298 airports in 3 km ones.
REGIONS = ["--radius", "1500", "--regions", os.path.join(fleet.DATA, "places", "rg_cities1000_geofences.csv"),
           "--radius", "3000", "--regions", os.path.join(fleet.DATA, "places", "airports_geofences.csv")]


def load_job():
    loader = importlib.machinery.SourceFileLoader("run_job", RUN_JOB)
    spec = importlib.util.spec_from_loader("run_job", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def job():
    return load_job()


@pytest.fixture(scope="session")
def binary():
    """The geofence executable: $GEOFENCE_BINARY, else the release build that tools/test
    makes as executors get it (swift build -c release --static-swift-stdlib)."""
    path = os.environ.get("GEOFENCE_BINARY") or os.path.join(ROOT, ".build", "release", "geofence")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no geofence executable at {path}: "
                    "run swift build -c release --static-swift-stdlib")
    return path


@pytest.fixture(scope="session")
def spark(job):
    # Two cores; a failed task is tried up to 4 times (local mode's default is once).
    session = job.session("local[2,4]")
    yield session
    session.stop()


def run_stream(binary, input_path, extra=()):
    """Single-process `geofence stream` over a file: its event lines."""
    with open(input_path, "rb") as f:
        done = subprocess.run([binary, "stream", "--quiet", *REGIONS, *extra], stdin=f,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    return done.stdout.decode().splitlines()


@pytest.fixture(scope="session")
def fleet_rows():
    return fleet.fleet(copies=2)


@pytest.fixture(scope="session")
def fleet_input(tmp_path_factory, fleet_rows):
    return fleet.write_jsonl(str(tmp_path_factory.mktemp("fleet") / "fixes.jsonl"), fleet_rows)


@pytest.fixture(scope="session")
def stream_events(binary, fleet_input):
    return run_stream(binary, fleet_input)
