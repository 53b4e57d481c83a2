"""Judge a fleet: every worker against the config, and the workers against each other.  Pure functions.

Each worker's ``/server_info`` has already been verified against the config exactly as a single server's is
(``evalpipe.server.verify``: top level and every ``internal_states`` entry).  Here the per-worker results
become one-line problems that name the worker and the field — ``worker http://b:30000 resolved
kv_cache_dtype 'q4_0' (config 'f16'; http://a:30000: 'f16')`` — plus the values the config does not pin but
that a fleet must still share (the engine version, the model file, the attention kernels …: each worker's kind
says which, ``ServerInfoReader.agreement``): a sign-off
speaks for one configuration, and a router spreads the samples over every worker.  A worker whose
``/server_info`` cannot be read is *unverified*, never passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalpipe.artifacts.schema.server import ServerVerification, VerifiedValue
from evalpipe.server.server_info import PLAIN, ServerInfoReader

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.server import ServerKind

@dataclass(frozen=True)
class WorkerCheck:
    """One worker as the fleet verification saw it."""

    url: str
    healthy: bool
    verification: ServerVerification | None
    info: dict[str, Any] | None  # the redacted /server_info; None when it could not be read
    info_error: str | None = None
    #: How this worker's ``/server_info`` is read: its own kind's reader (``Kind.server_info_reader``).
    reader: ServerInfoReader = PLAIN


def _values(worker: WorkerCheck, key: str) -> set[Any]:
    """Every value a worker reports for ``key``: top level and each ``internal_states`` entry, read by its
    kind's reader (an unreadable worker reports nothing)."""
    info, reader = worker.info, worker.reader
    if info is None:
        return set()
    out = {_hashable(reader.normalize(v)) for _, v in reader.state_values(info, key)}
    top = reader.value(info, key)
    if top is not None:
        out.add(_hashable(reader.normalize(top)))
    return out


def _hashable(value: Any) -> Any:
    return repr(value) if isinstance(value, (dict, list)) else value


def _shown(values: set[Any]) -> str:
    return " / ".join(repr(v) for v in sorted(values, key=repr)) if values else "(not reported)"


def worker_problems(worker: WorkerCheck, fleet: Sequence[WorkerCheck]) -> list[str]:
    """Why this worker is not verified: not healthy, unreadable, or a value unlike the config's."""
    if not worker.healthy:
        return [
            f"worker {worker.url} is listed unhealthy by the router: unverified (it serves again once healthy)"
        ]
    if worker.info is None or worker.verification is None:
        why = worker.info_error or "no answer"
        return [f"worker {worker.url}: /server_info unreadable ({why}): unverified"]
    out = []
    others = [w for w in fleet if w.url != worker.url and w.info is not None]
    for check in worker.verification.checks:
        if check.ok:
            continue
        seen = "; ".join(f"{o.url}: {_shown(_values(o, check.key))}" for o in others if o.info is not None)
        out.append(
            f"worker {worker.url} resolved {check.key} {check.resolved!r} (config {check.expected!r}"
            + (f"; {seen})" if seen else ")")
        )
    for key in worker.verification.unverified_keys:
        out.append(f"worker {worker.url} does not report {key}: unverified")
    return out


def agreement_keys(fleet: Sequence[WorkerCheck]) -> tuple[str, ...]:
    """What the workers must share: every worker kind's ``agreement``, in the order first declared."""
    keys: dict[str, None] = {}
    for worker in fleet:
        keys.update(dict.fromkeys(worker.reader.agreement))
    return tuple(keys)


def disagreements(fleet: Sequence[WorkerCheck], already: set[str] | None = None) -> list[str]:
    """Values the readable workers do not share (keys in ``already`` are reported elsewhere)."""
    readable = [w for w in fleet if w.info is not None]
    if len(readable) < 2:
        return []
    out = []
    for key in agreement_keys(fleet):
        if already and key in already:
            continue
        by_worker = {w.url: _values(w, key) for w in readable if w.info is not None}
        distinct = {v for values in by_worker.values() for v in values}
        if len(distinct) > 1 or (distinct and any(not values for values in by_worker.values())):
            shown = ", ".join(f"{url} {_shown(values)}" for url, values in by_worker.items())
            out.append(f"workers disagree on {key}: {shown}")
    return out


def fleet_problems(fleet: Sequence[WorkerCheck]) -> list[str]:
    """Every reason the fleet is not one verified configuration: per-worker problems (config mismatches,
    unreadable, unhealthy) first, then disagreements between workers on values the config does not pin."""
    out: list[str] = []
    mismatched: set[str] = set()
    for worker in fleet:
        out += worker_problems(worker, fleet)
        if worker.verification is not None:
            mismatched |= {c.key for c in worker.verification.checks if not c.ok}
    return out + disagreements(fleet, already=mismatched)


def combined_verification(
    fleet: Sequence[WorkerCheck],
    problems: Sequence[str],
    *,
    kind: ServerKind,
    base_url: str,
    variant: str | None,
    on_mismatch: str,
    head: str,
) -> ServerVerification:
    """The run's ``server/verification.json`` for a fleet: one check per configured value (ok only when
    every worker resolved it), the shared resolved values (None where workers differ), verified only when
    there is no problem at all; ``head`` names the router and its workers."""
    verifications = [w.verification for w in fleet if w.verification is not None]
    keys: list[str] = []
    for v in verifications:
        keys += [c.key for c in v.checks if c.key not in keys]
    checks = []
    for key in keys:
        found = [c for v in verifications for c in v.checks if c.key == key]
        resolved = {_hashable(c.resolved) for c in found}
        checks.append(
            VerifiedValue(
                key=key,
                expected=found[0].expected,
                resolved=found[0].resolved if len(resolved) == 1 else _shown(resolved),
                ok=len(found) == len(fleet) and all(c.ok for c in found),
            )
        )

    def shared(attr: str) -> Any:
        values = {getattr(v, attr) for v in verifications}
        return values.pop() if len(values) == 1 and len(verifications) == len(fleet) else None

    verified = not problems and len(verifications) == len(fleet) and all(v.verified for v in verifications)
    if verified:
        description = f"{head} — every worker verified from its own server_info"
    else:
        description = (
            f"{head} — NOT verified: "
            + "; ".join(problems[:3])
            + (f" (+{len(problems) - 3} more in server/fleet.json)" if len(problems) > 3 else "")
        )
    return ServerVerification(
        kind=kind,
        variant=variant,
        base_url=base_url,
        server_version=shared("server_version"),
        checks=checks,
        verified=verified,
        resolved_config_available=bool(verifications),
        unverified_keys=sorted({k for v in verifications for k in v.unverified_keys}),
        engine=shared("engine"),
        on_mismatch=on_mismatch,
        kv_cache_dtype=shared("kv_cache_dtype"),
        attention_backend=shared("attention_backend"),
        dsa_prefill_backend=shared("dsa_prefill_backend"),
        dsa_decode_backend=shared("dsa_decode_backend"),
        tp_size=shared("tp_size"),
        ep_size=shared("ep_size"),
        speculative_algorithm=shared("speculative_algorithm"),
        served_model_name=shared("served_model_name"),
        reasoning_parser=shared("reasoning_parser"),
        seed_effective=shared("seed_effective"),
        description=description,
    )
