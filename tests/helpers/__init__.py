"""Shared test helpers (imported as ``helpers.<module>``: pytest puts ``tests/`` on ``sys.path``)."""
