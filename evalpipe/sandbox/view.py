"""What a sandboxed program may see: the read-only paths of its interpreter, and its environment.

Both are allow-lists.  The filesystem view holds the system libraries (``/usr`` and its ``/lib*``
links), the Python installation (``sys.base_prefix``), the virtual environment (``sys.prefix``) and
whatever directories the caller names (e.g. the ``evalpipe`` package for the re-check's test process) —
never the home directory, the run directory or the repository around the package.  Measured on Debian 12
with pyenv's CPython 3.11: importing EvalScope's LiveCodeBench test code (numpy included) needs nothing
from ``/etc``; ``ld.so.cache`` and ``localtime`` are bound when present so that C extensions find
libraries outside the default paths and local time matches the host's.

The environment is built, not filtered: only the names below (with the values the sandbox decides, or
the host's for the few locale/hash-seed names) — so no ``*_API_KEY``, token, proxy or cloud variable
reaches a program whatever the host exports.  A caller may add names (e.g. an offline-datasets switch),
but a name that looks like a secret or a proxy setting is refused even then.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalpipe.processes.environment import PASSED_THROUGH, looks_secret

#: System directories every interpreter needs (their ``/lib``-style links are recreated as links).
SYSTEM_DIRS = ("/usr",)
#: Root-level links of a merged-/usr system (Debian ≥ 12); on a split system they are directories.
ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Single files bound when present.
OPTIONAL_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime")
OPTIONAL_DIRS = ("/etc/ld.so.conf.d",)

#: The private tmp (cwd, $HOME, $TMPDIR) inside the sandbox.
SANDBOX_TMP = "/tmp"


class UnsafeEnvironment(ValueError):
    """A caller tried to pass a variable whose name looks like a secret or a proxy setting."""


@dataclass(frozen=True)
class Bind:
    """A host path shown read-only at the same path inside the sandbox."""

    path: str
    is_dir: bool


@dataclass(frozen=True)
class FilesystemView:
    binds: tuple[Bind, ...]
    #: ``(link, target)`` for the merged-/usr root links (``/lib -> usr/lib``).
    links: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def describe(self) -> list[str]:
        return [b.path for b in self.binds] + [f"{a} -> {t}" for a, t in self.links]


def _covered(path: str, by: Iterable[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in by)


def interpreter_view(extra_dirs: Iterable[str | os.PathLike[str]] = ()) -> FilesystemView:
    """The read-only view for this process's interpreter, plus ``extra_dirs`` (real paths, deduplicated).

    Paths are resolved (a venv's ``bin/python`` links to the base installation), and a path inside
    another bound path is not bound twice.
    """
    wanted: list[str] = []
    for d in SYSTEM_DIRS:
        if os.path.isdir(d):
            wanted.append(d)
    for p in (sys.base_prefix, sys.prefix, *extra_dirs):
        real = os.path.realpath(p)
        if os.path.isdir(real):
            wanted.append(real)
    # the interpreter's own executable may live outside both prefixes (a distribution's /usr/bin/python3)
    wanted.append(os.path.dirname(os.path.realpath(sys.executable)))
    dirs: list[str] = []
    for p in sorted(set(wanted), key=len):
        if not _covered(p, dirs):
            dirs.append(p)
    binds = [Bind(d, True) for d in dirs]
    links: list[tuple[str, str]] = []
    for link in ROOT_LINKS:
        if os.path.islink(link):
            links.append((link, os.readlink(link)))
        elif os.path.isdir(link) and not _covered(link, dirs):
            binds.append(Bind(link, True))
    binds += [Bind(f, False) for f in OPTIONAL_FILES if os.path.isfile(f)]
    binds += [Bind(d, True) for d in OPTIONAL_DIRS if os.path.isdir(d)]
    return FilesystemView(tuple(binds), tuple(links))


def sandbox_environment(
    home: str, extra: Mapping[str, str] | None = None, host: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The whole environment of a sandboxed program (see the module docstring)."""
    host = os.environ if host is None else host
    bin_dir = os.path.dirname(os.path.realpath(sys.executable))
    env = {
        "PATH": os.pathsep.join(
            dict.fromkeys((os.path.join(sys.prefix, "bin"), bin_dir, "/usr/bin", "/bin"))
        ),
        "HOME": home,
        "TMPDIR": home,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        # one BLAS/OpenMP thread: numpy's thread pool would otherwise reserve address space per core
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    for name in PASSED_THROUGH:
        if name in host:
            env[name] = host[name]
    for name, value in (extra or {}).items():
        if looks_secret(name):
            raise UnsafeEnvironment(f"environment variable {name} looks like a secret or proxy setting")
        env[name] = value
    return env


def package_dir(module_file: str) -> str:
    """The directory of a package, from one of its modules' ``__file__`` (for ``extra_dirs``)."""
    return str(Path(module_file).resolve().parent)
