"""Thin typer CLI: each command parses arguments and calls a library function."""
