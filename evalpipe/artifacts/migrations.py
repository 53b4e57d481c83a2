"""Older artifact versions lifted to the current one, in memory, before validation.

Every bump of a model's ``schema_version`` has one step here, keyed by the model's class name (the models
themselves are not imported: this module sits under every package that reads a file).  ``read_model`` and
``read_jsonl`` (``evalpipe.artifacts.io``) run the steps from the file's version up to the model's on the
parsed JSON and validate the result; the file on disk is never rewritten.  A file newer than the model is
refused before any step runs (``check_schema_version``).

What each bump changed, from the models' history (``git log -p`` on ``evalpipe/artifacts/schema/``, formerly
``evalpipe/schema/``): every change so far only added fields (or widened a ``Literal``), and each added field's
default says what an older writer meant — an A/A control, a gate basis, a ``--no-speed`` flag or a fleet watch
that did not exist then.  So those steps set the version and change nothing else; each says why that is
right.  A bump that renames, removes, retypes or newly requires a field transforms the data in its step
(``tests/artifacts/test_migrations.py`` fails when a bump has no step): Summary v3 renamed a field, CompareResult v5
dropped the sentences for the typed values they were written from.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.errors import ArtifactError

Raw = dict[str, Any]


@dataclass(frozen=True)
class Step:
    """Lift ``model``'s JSON from ``from_version`` to ``from_version + 1``."""

    model: str
    from_version: int
    what_changed: str
    lift: Callable[[Raw], Raw] | None = None  # None: the added fields' defaults hold for the old writer


STEPS: tuple[Step, ...] = (
    Step(
        "CompareResult",
        1,
        "v2 (801d7a2): per block the Bonett-Price paired interval and test, A/B and A/A discordance, noise vs "
        "A/B, MDE, non_inferiority; run_aa/label_aa. All optional: a v1 file had no A/A control and no margin, "
        "so None is what it measured.",
    ),
    Step(
        "CompareResult",
        2,
        "v3 (d76b08a): a block's sequential result (generation.sequential). None: the block was not judged "
        "unit by unit; non_inferiority stayed the fixed 95 % interval, as v3 still wrote it.",
    ),
    Step(
        "CompareResult",
        3,
        "v4 (fe10a91): non_inferiority.basis/alpha/critical_value and the block's operating characteristic. "
        "None is the model's documented reading of an older file: the fixed 95 % interval (z = 1.96), which is "
        "the rule v1-v3 judged by; its verdict is worded so (evalpipe.words.compare.verdict_sentence).",
    ),
    Step(
        "CompareResult",
        4,
        "v5: numbers only. Dropped: the sentences (line, aa_sentence, mde_sentence, length_verdict, and "
        "sentence of noise_vs_ab, non_inferiority and sequential: evalpipe.report writes them from the "
        "numbers) and method (fixed text around bootstrap_resamples and bootstrap_seed). Typed from the old "
        "text: repeats (the line's 'first of N attempts', else 1), mde_basis (its string read back into "
        "fields; None when it does not read), noise_vs_ab.n_samples (the block's n_pairs) and "
        "sequential.sequence_seed (the seed in its order).",
        lift=lambda raw: _compare_numbers_only(raw),
    ),
    Step(
        "CompareResult",
        5,
        "v6: the interval beside a sequential verdict is the inversion of the e-processes that decide "
        "(sequential.cs_low/cs_high and its looks; non_inferiority's bounds at a crossing or with no crossing); "
        "non_inferiority gains alpha_spent, units_used and two bases ('fixed: first run', 'sequential: no "
        "crossing'). A v5 file's sequential intervals were the two-sided empirical-Bernstein confidence "
        "sequence, which tests no margin: kept, marked interval 'descriptive' (and so worded apart from the "
        "verdict); its 'extended: no crossing' with no extension (sequential_share 1) stays as written.",
        lift=lambda raw: _compare_descriptive_intervals(raw),
    ),
    Step(
        "Summary",
        3,
        "v4: the finding code fp8_kv_unscaled (an FP8 KV cache that ran with scaling factors 1.0). A widened "
        "Literal: a v3 file holds none, and every v3 code is still valid.",
    ),
    Step(
        "Summary",
        5,
        "v6: the finding codes fp8_kv_block_scaled (an FP8 KV pool whose rows carry per-block scales, over "
        "which SGLang still prints its per-tensor 'scaling factors of 1.0' line) and dsa_prefill_kernel_share "
        "(the share of prefills that reached the DSA prefill kernel the server named). A widened Literal: a v5 "
        "file holds none, and every v5 code is still valid.",
    ),
    Step(
        "Provenance",
        1,
        "v2: packages[].environment (read in the serving engine's environment or evalpipe's own). None: a v1 "
        "writer did not record it.",
    ),
    Step(
        "ServerVerification",
        1,
        "v2: kv_cache (the pool's dtype, capacity and FP8 scale state from the server's log), the served "
        "context, cache_state (prefix cache, fresh start) and unreported_settings. None / empty: a v1 writer "
        "did not read them, so they are unknown, never claimed.",
    ),
    Step(
        "ServerVerification",
        2,
        "v3: sparse_attention (a DSA server's kernels from its log, KV row layout and bytes per token per "
        "layer, page size, dense-prefill threshold). None: a v2 writer did not read them, so they are unknown, "
        "never claimed.",
    ),
    Step(
        "CompareResult",
        6,
        "v7: scoring, and per block dropped, dropped_one_arm and design_check. A v6 file (and older) scored a, "
        "b, the difference, its interval, McNemar and the flips by the summary's rule (is_correct in both arms; a unit "
        "dropped before generation counted wrong in both), so scoring is set to 'summary rule'; no unit was "
        "left out (dropped empty) and no design was checked (None).",
        lift=lambda raw: {**raw, "scoring": "summary rule"},
    ),
    Step(
        "CompareResult",
        7,
        "v8: benchmark_versions. Empty: a v7 file recorded no benchmark's version (its runs may have "
        "recorded some; the comparison did not check them), which the report reads as unknown.",
    ),
    Step(
        "CompareResult",
        8,
        "v9: units_by_attempts in each sequential block. Empty: a v8 file's units all had the block's "
        "repeats (no internal pilot existed).",
    ),
    Step(
        "CompareResult",
        9,
        "v10: numerics, the paired numerics probe. None: a v9 file's runs had no numerics probe.",
    ),
    Step(
        "PilotDecision",
        1,
        "v2: the pilot's agreement units (asked twice), their within-unit sums, the within share and the "
        "effective ratio; attempts chosen as the fewest that reach the threshold. Defaults: a v1 pilot asked no "
        "unit twice and measured no split, which is what it did.",
    ),
    Step(
        "RunRecord",
        1,
        "v2 (92bd3da): no_speed and speed_gate_waived. False: v1 had no --no-speed, so the config's speed "
        "section (if any) ran.",
    ),
    Step(
        "RunRecord",
        2,
        "v3: benchmark_versions. Empty: a v2 run was made before benchmarks declared a version, so which "
        "version of a benchmark's prompt and scoring it ran is unknown (compare says so and pairs it on its "
        "manifest and prompts alone).",
    ),
    Step(
        "ExtensionRecord",
        1,
        "v2 (21ea59c): prior_generations. Empty: the extended run is read as one generation, as v1 runs were "
        "judged (the model's documented reading).",
    ),
    Step(
        "Summary",
        1,
        "v2 (fd21561, fd1b81e, 92bd3da): explorer, reviews, speed_not_measured, the fleet's watch events. "
        "None/empty: v1 had no explorer, no review export, no --no-speed and no fleet watch.",
    ),
    Step(
        "Summary",
        2,
        "v3: speed.seed_workload renamed lead_workload (the workload whose throughput fills the results table: "
        "'seed' meant the random seed elsewhere). The value moves unchanged.",
        lift=lambda raw: _renamed_speed_workload(raw),
    ),
    Step(
        "Summary",
        4,
        "v5: the finding code discordance_above_design (a Literal widened). A v3 file holds none: no paired "
        "comparison checked its measured discordance against the design then.",
    ),
    Step(
        "ExplorerData",
        1,
        "v2: numerics, the numerics probe's panel. None: a v1 page had no numerics probe.",
    ),
    Step(
        "Summary",
        6,
        "v7: numerics (the numerics probe's comparison) and the gate numerics_fail_above. None: a v6 run had "
        "no numerics probe.",
    ),
    Step(
        "FleetRecord",
        1,
        "v2 (fd21561): the watch during the evaluation (events, earlier_events, watch_interval_s). Empty/None: "
        "v1 took the start and end snapshots only.",
    ),
)


def _renamed_speed_workload(raw: Raw) -> Raw:
    speed = raw.get("speed")
    if isinstance(speed, dict) and "seed_workload" in speed:
        speed = {("lead_workload" if k == "seed_workload" else k): v for k, v in speed.items()}
        return {**raw, "speed": speed}
    return raw


#: compare.json v4's mde_basis: "{A/A|A/B} mean squared difference {m2:.4f} over {n} samples" then either
#: ", one attempt each" or " with repeats (within-sample variance {w:.4f} per attempt, between {b:.4f})",
#: then "; {method}, {k} attempt(s) per arm" (the only form v2-v4 wrote)
_MDE_BASIS = re.compile(
    r"(?P<noise>A/A|A/B) mean squared difference (?P<m2>[0-9.]+) over \d+ samples"
    r"(?:, one attempt each| with repeats \(within-sample variance (?P<within>[0-9.]+) per attempt, "
    r"between (?P<between>[0-9.]+)\))"
    r"; (?P<method>exact McNemar|normal approximation \(score test\)), (?P<repeats>\d+) attempt\(s\) per arm"
)
_FIRST_OF = re.compile(r"\(first of (\d+) attempts\)$")
_SEQUENCE_SEED = re.compile(r'^sha256\(f"(-?\d+):sequence:')


def _mde_basis(text: object) -> Raw | None:
    """The v4 string as fields; the power and level are the ones every v2-v4 writer used (80 %, two-sided
    0.05: ``evalpipe.stats.power``'s defaults, which compare never overrode)."""
    found = _MDE_BASIS.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        return None
    within, between = found["within"], found["between"]
    return {
        "noise": found["noise"],
        "second_moment": float(found["m2"]),
        "within": float(within) if within is not None else None,
        "between": float(between) if between is not None else None,
        "method": found["method"],
        "repeats": int(found["repeats"]),
        "power": 0.8,
        "alpha": 0.05,
    }


def _block_numbers_only(block: Raw) -> Raw:
    """One paired block of compare.json v4 (and its length buckets) without its sentences."""
    prose = {"line", "aa_sentence", "mde_sentence", "length_verdict"}
    out = {k: v for k, v in block.items() if k not in prose}
    line = block.get("line")
    first_of = _FIRST_OF.search(line) if isinstance(line, str) else None
    out.setdefault("repeats", int(first_of.group(1)) if first_of else 1)
    if "mde_basis" in block:
        out["mde_basis"] = _mde_basis(block["mde_basis"])
    noise = block.get("noise_vs_ab")
    if isinstance(noise, dict):
        noise = {k: v for k, v in noise.items() if k != "sentence"}
        noise.setdefault("n_samples", block.get("n_pairs"))
        out["noise_vs_ab"] = noise
    verdict = block.get("non_inferiority")
    if isinstance(verdict, dict):
        out["non_inferiority"] = {k: v for k, v in verdict.items() if k != "sentence"}
    sequential = block.get("sequential")
    if isinstance(sequential, dict):
        sequential = {k: v for k, v in sequential.items() if k not in ("sentence", "order")}
        seed = _SEQUENCE_SEED.match(block["sequential"].get("order") or "")
        if seed is not None:  # without it validation names the missing field
            sequential["sequence_seed"] = int(seed.group(1))
        out["sequential"] = sequential
    if isinstance(block.get("by_length"), list):
        out["by_length"] = [_block_numbers_only(x) if isinstance(x, dict) else x for x in block["by_length"]]
    return out


def _compare_numbers_only(raw: Raw) -> Raw:
    out = {k: v for k, v in raw.items() if k != "method"}
    for key in ("benchmarks", "pools"):
        if isinstance(raw.get(key), list):
            out[key] = [_block_numbers_only(b) if isinstance(b, dict) else b for b in raw[key]]
    if isinstance(raw.get("overall"), dict):
        out["overall"] = _block_numbers_only(raw["overall"])
    return out


#: (model class name, from_version) -> step
TABLE: dict[tuple[str, int], Step] = {(s.model, s.from_version): s for s in STEPS}


def upgrade(path: Path, raw: Any, model: str, current: int) -> Any:
    """``raw`` (parsed JSON of ``path``) lifted to ``current``; other values unchanged.  ``raw`` is not
    mutated: every step works on a copy."""
    if not isinstance(raw, dict):
        return raw
    found = raw.get("schema_version")
    if not isinstance(found, int) or found >= current:
        return raw
    out: Raw = dict(raw)
    for version in range(found, current):
        step = TABLE.get((model, version))
        if step is None:
            raise ArtifactError(
                f"{path}: {model} schema_version {found} cannot be read: no migration from version {version} "
                f"to {version + 1} (this evalpipe writes {current})"
            )
        if step.lift is not None:
            out = step.lift(out)
        out["schema_version"] = version + 1
    return out


def _compare_descriptive_intervals(raw: Raw) -> Raw:
    """CompareResult v5 → v6: every sequential block's interval, and a gate's bounds read from it, marked
    descriptive (the v5 writer put the empirical-Bernstein confidence sequence there).  On a deep copy."""
    raw = copy.deepcopy(raw)

    def mark(block: Any) -> None:
        if not isinstance(block, dict):
            return
        seq = block.get("sequential")
        if isinstance(seq, dict):
            seq["interval"] = "descriptive"
        ni = block.get("non_inferiority")
        if isinstance(ni, dict) and ni.get("basis") in ("sequential crossing", "extended: no crossing"):
            ni["interval"] = "descriptive"
        for bucket in block.get("by_length") or []:
            mark(bucket)

    for key in ("benchmarks", "pools"):
        for block in raw.get(key) or []:
            mark(block)
    mark(raw.get("overall"))
    return raw
