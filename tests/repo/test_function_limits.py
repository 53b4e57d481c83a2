"""No function in ``evalpipe/`` takes more than 8 parameters or spans more than 80 lines outside the one list of
declared exceptions (``tools/function_limits.toml``), and that list only shrinks.

``tools/function_limits.py`` measures every ``def`` from the syntax tree (parameters less ``self``/``cls``;
lines ``end_lineno - lineno + 1``).  A new long function or long signature fails here: give it a parameter
object or name its steps as functions, or argue its entry in the list (with the size it may not grow past) in
the same commit.  An entry grown past its size fails, and so does one no longer needed.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

import function_limits as limits  # noqa: E402


def test_no_function_exceeds_a_limit_outside_the_declared_list() -> None:
    found = limits.problems(limits.functions(), limits.exceptions())
    assert found == [], "functions over the limits (tools/function_limits.toml):\n  " + "\n  ".join(found)


def test_every_declared_exception_says_why() -> None:
    declared = limits.exceptions()
    assert len({(e.name, e.limit) for e in declared}) == len(declared), "an exception is listed twice"
    assert all(len(e.reason) >= 40 for e in declared), "a reason says why the function stays over its limit"


def _package(tmp_path: Path, source: str) -> Path:
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "mod.py").write_text(textwrap.dedent(source))
    return root


def test_parameters_are_counted_without_self_and_with_star_args(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        """
        def free(a, b, /, c, *args, d, **kwargs):
            return a

        class C:
            def method(self, a, b):
                def inner(self, x):
                    return x
                return inner

            @classmethod
            def build(cls, a):
                return cls
        """,
    )
    sizes = {f.name: f.params for f in limits.functions(root)}
    assert sizes == {
        "pkg.mod:free": 6,
        "pkg.mod:C.method": 2,
        "pkg.mod:C.method.inner": 2,  # a nested function's "self" is an ordinary parameter
        "pkg.mod:C.build": 1,
    }


def test_lines_span_the_def_to_its_last_line(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    root = _package(tmp_path, f"@staticmethod\ndef long():\n{body}\n\n\ndef short():\n    return 1\n")
    found = {f.name: f for f in limits.functions(root)}
    assert (found["pkg.mod:long"].lines, found["pkg.mod:short"].lines) == (82, 2)
    assert [(f.name, limit) for f, limit in limits.breaches(list(found.values()))] == [("pkg.mod:long", "lines")]


def test_the_list_is_a_ratchet(tmp_path: Path) -> None:
    """Undeclared, grown past its size, no longer over, gone: each is one problem line."""
    root = _package(tmp_path, "def wide(a, b, c, d, e, f, g, h, i, j):\n    return a\n\n\ndef narrow(a):\n    return a\n")
    funcs = limits.functions(root)
    assert limits.problems(funcs, []) == [
        "pkg.mod:wide: 10 params (pkg/mod.py:1), over the limit and not declared"
    ]
    entry = limits.Exception_("pkg.mod:wide", "params", 10, "a reason")
    assert limits.problems(funcs, [entry]) == []
    assert limits.problems(funcs, [limits.Exception_("pkg.mod:wide", "params", 9, "a reason")]) == [
        "pkg.mod:wide: 10 params, grown past its declared 9"
    ]
    stale = [entry, limits.Exception_("pkg.mod:narrow", "params", 9, "r"), limits.Exception_("pkg.mod:gone", "lines", 90, "r")]
    assert limits.problems(funcs, stale) == [
        "pkg.mod:narrow: 1 params, within the limit now (remove the entry)",
        "pkg.mod:gone: declared over its lines limit but no such function (remove the entry)",
    ]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('function = "m:f"\nlimit = "params"\nat_most = 9\n', "exactly function, limit, at_most and reason"),
        ('function = "m:f"\nlimit = "width"\nat_most = 9\nreason = "r"\n', "limit must be 'params' or 'lines'"),
        ('function = "m:f"\nlimit = "lines"\nat_most = 90\nreason = " "\n', "needs its reason"),
    ],
)
def test_an_entry_without_its_fields_is_refused(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "limits.toml"
    path.write_text("[[exception]]\n" + entry)
    with pytest.raises(ValueError, match=message):
        limits.exceptions(path)
