"""tools/spark/run-job on local Spark against single-process `geofence stream`.

Every test compares the job's output with the stream's (or with another run of the job) line
for line: the events are the engine's JSON Lines, so equal means byte-identical.
"""

import glob
import json
import os
import subprocess

from conftest import REGIONS, run_stream
import fleet


def by_device_and_time(lines):
    # Stable: events of one device at one fix keep the engine's order (exits, enters, dwells).
    return sorted(lines, key=lambda l: (json.loads(l)["device_id"], json.loads(l)["time"]))


def job_lines(folder):
    lines = []
    for part in sorted(glob.glob(os.path.join(folder, "part-*"))):
        with open(part) as f:
            lines.extend(l for l in f.read().splitlines() if l)
    return lines


def run_job(job, spark, binary, fixes, out, *extra, partitions=3):
    status = job.main(["--fixes", fixes, *REGIONS, "--out", out, "--binary", binary,
                       "--partitions", str(partitions), *extra], spark=spark)
    assert status == 0


def test_job_writes_the_streams_events(job, spark, binary, fleet_input, fleet_rows,
                                       stream_events, tmp_path):
    devices = {r[1] for r in fleet_rows}
    assert len(devices) >= 30 and len(fleet_rows) >= 50_000
    events = [json.loads(l) for l in stream_events]
    assert {e["type"] for e in events} == {"enter", "exit", "dwell"}
    assert len({e["device_id"] for e in events}) >= 12

    out = str(tmp_path / "out")
    run_job(job, spark, binary, fleet_input, out)
    got = job_lines(os.path.join(out, "jsonl"))
    assert len(glob.glob(os.path.join(out, "jsonl", "part-*"))) == 3
    assert by_device_and_time(got) == by_device_and_time(stream_events)

    # The Parquet copy holds the same events, member for member.
    rows = spark.read.parquet(os.path.join(out, "parquet")).collect()
    assert len(rows) == len(events)
    expected = {e["id"]: e for e in events}
    for row in rows:
        e = expected[row["id"]]
        for name in ("type", "geofence_id", "geofence_name", "device_id", "latitude",
                     "longitude", "accuracy", "distance_m", "dwell_s", "visit_s", "after_gap"):
            assert row[name] == e[name], (name, row, e)
        assert json.loads(row["metadata"]) == e["metadata"]
        assert row["time"].strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" == e["time"]


def test_csv_input_gives_the_same_events(job, spark, binary, fleet_rows, stream_events, tmp_path):
    # The same fleet as CSV: every column is text, times both RFC 3339 and epoch seconds.
    path = tmp_path / "fixes.csv"
    with open(path, "w") as f:
        f.write("device_id,time,lat,lon,accuracy\n")
        for _, device, value, lat, lon, acc in fleet_rows:
            f.write(f"{device},{json.loads(value) if value.startswith(chr(34)) else value},"
                    f"{lat},{lon},{acc or ''}\n")
    out = str(tmp_path / "out")
    run_job(job, spark, binary, str(path), out, partitions=2)
    assert by_device_and_time(job_lines(os.path.join(out, "jsonl"))) == \
        by_device_and_time(stream_events)


def test_a_task_failing_once_is_retried_without_duplicates(job, spark, binary, fleet_input,
                                                           stream_events, tmp_path):
    marker = tmp_path / "marker"
    marker.mkdir()
    out = str(tmp_path / "out")
    run_job(job, spark, binary, fleet_input, out, "--fail-once", str(marker))
    # One task attempt did fail, after passing on some events.
    assert (marker / "failed").is_dir()
    got = job_lines(os.path.join(out, "jsonl"))
    ids = [json.loads(l)["id"] for l in got]
    assert len(ids) == len(set(ids))
    assert by_device_and_time(got) == by_device_and_time(stream_events)
    assert spark.read.parquet(os.path.join(out, "parquet")).count() == len(stream_events)


def test_two_days_with_state_equal_one_run(job, spark, binary, fleet_rows, fleet_input,
                                           stream_events, tmp_path):
    # Cut where visits are open: one second after the ENTER of a visit that dwells later
    # (as a day's job ends at midnight while devices are inside).
    events = [json.loads(l) for l in stream_events]
    dwell = [e for e in events if e["type"] == "dwell"]
    enters = {(e["device_id"], e["geofence_id"]): e for e in events if e["type"] == "enter"}
    middle = dwell[len(dwell) // 2]
    cut = fleet.instant(enters[(middle["device_id"], middle["geofence_id"])]["time"]) + 1
    day1 = [r for r in fleet_rows if r[0] <= cut]
    day2 = [r for r in fleet_rows if r[0] > cut]
    open_visits = [d for d in dwell if fleet.instant(enters[(d["device_id"], d["geofence_id"])]["time"]) <= cut
                   < fleet.instant(d["time"])]
    assert open_visits and day1 and day2

    state = str(tmp_path / "state")
    got = []
    full_state = str(tmp_path / "full-state")
    run_job(job, spark, binary, fleet_input, str(tmp_path / "full"), "--state-out", full_state)
    for day, rows in (("day1", day1), ("day2", day2)):
        path = fleet.write_jsonl(str(tmp_path / f"{day}.jsonl"), rows)
        run_job(job, spark, binary, path, str(tmp_path / day), "--state", state)
        got.append(job_lines(str(tmp_path / day / "jsonl")))
    assert by_device_and_time(got[0] + got[1]) == by_device_and_time(stream_events)
    # A dwell runs across the cut, and a device still inside gets no second ENTER.
    day2_events = [json.loads(l) for l in got[1]]
    for d in open_visits:
        assert any(e["id"] == d["id"] for e in day2_events)
        assert not any(e["type"] == "enter" and e["device_id"] == d["device_id"]
                       and e["geofence_id"] == d["geofence_id"] for e in day2_events)
    # The state after day 2 is the one run's, device for device.
    def checkpoints(path):
        return sorted((r["device_id"], r["checkpoint"]) for r in spark.read.parquet(path).collect())
    assert checkpoints(state) == checkpoints(full_state)
    assert len(checkpoints(state)) == len({r[1] for r in fleet_rows})


def test_the_binary_needs_no_swift_runtime(binary):
    # Linked with --static-swift-stdlib: no libswift*.so among the libraries it loads.
    needed = subprocess.run(["readelf", "-d", binary], stdout=subprocess.PIPE, check=True,
                            text=True).stdout
    libraries = [l.split("[")[1].rstrip("]") for l in needed.splitlines() if "(NEEDED)" in l]
    assert "libsqlite3.so.0" in libraries
    assert not [l for l in libraries if "swift" in l or "Foundation" in l or "dispatch" in l], libraries
