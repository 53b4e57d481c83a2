"""Versioned artifact models: one pydantic model per run-directory file.

Each model's first field is ``schema_version``; readers refuse newer versions (``evalpipe.artifacts.io``)
and lift older ones (``evalpipe.artifacts.migrations``: one step per bump).
"""
