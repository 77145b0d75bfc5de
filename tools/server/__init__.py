"""Reference geofence sync and event-ingest server (test-only; binds to loopback).

The wire protocol is specified in ``docs/openapi.yaml`` and ``docs/sync-protocol.md``.
"""
