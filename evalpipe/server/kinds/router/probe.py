"""Do the request fields evalpipe relies on reach the workers with their effect intact?

A router re-serialises every chat request (sglang-router 0.3.2 renames ``max_tokens``, re-encodes floats
as float32, drops fields it does not know), and evalpipe cannot see the bodies its workers receive.  What
it can see is the *effect*: for each field, the same small request is sent to every worker directly (twice,
to know whether its answer is reproducible) and once with the field changed (the control: does the field
change anything on this worker at all?), then through the router.  The field was honoured when every
answer through the router is an answer some worker gives directly; it changed generation when the answers
are reproducible and the router's is none of them.

The checks, all with a handful of tokens:

- ``max_tokens`` 4 → ``finish_reason: length`` and ``completion_tokens == 4`` (compared on those two);
- ``temperature`` 0 → the greedy answer (control: 1.5);
- ``seed`` at temperature 1.5 → the same answer for the same seed (control: another seed; a worker whose
  seeded answers are not reproducible — SGLang without deterministic inference — makes it unobservable);
- ``top_p`` 1e-6 at temperature 1.5 → the greedy answer (control: ``top_p`` 1);
- ``n`` 2 → two choices (compared on the number of choices);
- the chat-template thinking toggle off (control: on) — observable only where the template reacts to it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from evalpipe.artifacts.schema.fleet import FieldProbe, FieldVerdict, RequestFieldProbe
from evalpipe.recording.request_id import HEADER, x_request_id
from evalpipe.server import fetch
from evalpipe.server.kinds.router.sglang_router import FORWARDING, Forwarding

PROMPT = "Write a long story about a cat who lives in a lighthouse."
BASE_MAX_TOKENS = 12
SMALL_MAX_TOKENS = 4
HOT = 1.5  # a temperature at which sampling visibly varies
SEED, OTHER_SEED = 1234, 4321

Choice = tuple[str | None, str | None, str | None]  # content, reasoning_content, finish_reason


@dataclass(frozen=True)
class Answer:
    """What a chat completion said, reduced to what the checks compare."""

    status: int | None
    choices: tuple[Choice, ...] = ()
    completion_tokens: int | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None

    def summary(self) -> str:
        if not self.ok:
            return f"error {self.error or self.status}"
        first = self.choices[0] if self.choices else (None, None, None)
        text = (first[0] or first[1] or "")[:24]
        n = f"{len(self.choices)} choices, " if len(self.choices) != 1 else ""
        return f"{n}{first[2]}, {self.completion_tokens} tokens, {text!r}"


def answer_of(res: fetch.HttpResult) -> Answer:
    if not res.ok:
        return Answer(res.status, error=res.describe())
    try:
        body = res.json()
        choices = tuple(
            (c["message"].get("content"), c["message"].get("reasoning_content"), c.get("finish_reason"))
            for c in body["choices"]
        )
        usage = body.get("usage") or {}
        tokens = usage.get("completion_tokens")
        return Answer(200, choices, tokens if isinstance(tokens, int) else None)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return Answer(res.status, error=f"not a chat completion ({type(exc).__name__})")


def _full(a: Answer) -> Hashable:
    return (a.ok, a.choices)


def _length_and_tokens(a: Answer) -> Hashable:
    return (a.ok, tuple(c[2] for c in a.choices), a.completion_tokens)


def _n_choices(a: Answer) -> Hashable:
    return (a.ok, len(a.choices))


@dataclass(frozen=True)
class ProbeCheck:
    """One field: the request with it set (``test``) and with it changed (``control``)."""

    field: str
    test: dict[str, Any]
    control: dict[str, Any]
    forwarding_key: str
    project: Callable[[Answer], Hashable] = _full
    expect: Callable[[Answer], bool] | None = None
    expect_text: str = ""


def _max_tokens_honoured(a: Answer) -> bool:
    return (
        bool(a.choices)
        and all(c[2] == "length" for c in a.choices)
        and a.completion_tokens == SMALL_MAX_TOKENS
    )


def _two_choices(a: Answer) -> bool:
    return len(a.choices) == 2


def default_checks(thinking_toggle: str | None = "enable_thinking") -> list[ProbeCheck]:
    """The checks above; the thinking check only when the model has a chat-template toggle."""
    checks = [
        ProbeCheck(
            "max_tokens",
            {"max_tokens": SMALL_MAX_TOKENS, "temperature": 0},
            {"max_tokens": BASE_MAX_TOKENS, "temperature": 0},
            "max_tokens",
            project=_length_and_tokens,
            expect=_max_tokens_honoured,
            expect_text=f"finish_reason length with completion_tokens == {SMALL_MAX_TOKENS}",
        ),
        ProbeCheck(
            "temperature", {"temperature": 0}, {"temperature": HOT, "seed": OTHER_SEED}, "temperature"
        ),
        ProbeCheck(
            "seed", {"temperature": HOT, "seed": SEED}, {"temperature": HOT, "seed": OTHER_SEED}, "seed"
        ),
        ProbeCheck(
            "top_p",
            {"temperature": HOT, "top_p": 1e-6},
            {"temperature": HOT, "top_p": 1.0, "seed": OTHER_SEED},
            "top_p",
        ),
        ProbeCheck(
            "n",
            {"n": 2, "temperature": 0, "max_tokens": SMALL_MAX_TOKENS},
            {"n": 1, "temperature": 0, "max_tokens": SMALL_MAX_TOKENS},
            "n",
            project=_n_choices,
            expect=_two_choices,
            expect_text="two choices",
        ),
    ]
    if thinking_toggle:
        checks.append(
            ProbeCheck(
                f"chat_template_kwargs.{thinking_toggle}",
                {"chat_template_kwargs": {thinking_toggle: False}, "temperature": 0},
                {"chat_template_kwargs": {thinking_toggle: True}, "temperature": 0},
                "chat_template_kwargs",
            )
        )
    return checks


def request_body(
    model: str, overrides: Mapping[str, Any], base_kwargs: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The probe request: a short prompt, 12 tokens, greedy, then the check's fields (the run's own
    ``chat_template_kwargs`` kept unless the check sets the same key)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": BASE_MAX_TOKENS,
        "temperature": 0,
        "stream": False,
    }
    if base_kwargs:
        body["chat_template_kwargs"] = dict(base_kwargs)
    for key, value in overrides.items():
        if key == "chat_template_kwargs":
            body["chat_template_kwargs"] = {**body.get("chat_template_kwargs", {}), **value}
        else:
            body[key] = copy.deepcopy(value)
    return body


@dataclass
class Observations:
    """What one check saw: per worker [test, test again] and the control; the router's answers."""

    direct: dict[str, list[Answer]] = field(default_factory=dict)
    control: dict[str, Answer] = field(default_factory=dict)
    routed: list[Answer] = field(default_factory=list)


def judge(check: ProbeCheck, obs: Observations, forwarding: Forwarding | None) -> FieldProbe:
    """The verdict for one field from what was observed.  Pure."""
    p = check.project
    sent = ", ".join(f"{k}={v}" for k, v in check.test.items())

    def line(text: str) -> str:
        return f"{sent}: {text}"

    def make(verdict: FieldVerdict, text: str) -> FieldProbe:
        return FieldProbe(
            field=check.field,
            verdict=verdict,
            detail=line(text),
            forwarded_as=forwarding.how if forwarding else None,
        )

    answering = {w: a for w, a in obs.direct.items() if a and all(x.ok for x in a)}
    if not answering:
        first = next((x for a in obs.direct.values() for x in a if not x.ok), None)
        why = first.summary() if first else "no worker asked"
        return make("not_observable", f"the workers refuse it directly ({why})")
    refused = [a for a in obs.routed if not a.ok]
    if refused:
        return make("refused", f"the router answered {refused[0].summary()} where the workers answered it")
    reproducible = {w: a for w, a in answering.items() if len({p(x) for x in a}) == 1}
    if not reproducible:
        return make("not_observable", "two direct answers to the same request differ on every worker")
    direct_set = {p(a[0]) for a in reproducible.values()}
    matched = all(p(a) in direct_set for a in obs.routed)
    direct_meets = check.expect is None or all(check.expect(a[0]) for a in reproducible.values())
    routed_meets = check.expect is None or all(check.expect(a) for a in obs.routed)
    effect = any(w in obs.control and p(obs.control[w]) != p(a[0]) for w, a in reproducible.items())
    routed = "; ".join(sorted({a.summary() for a in obs.routed}))
    direct = "; ".join(sorted({a[0].summary() for a in reproducible.values()}))
    all_reproducible = len(reproducible) == len(answering)
    if matched and routed_meets:
        if not direct_meets:
            return make(
                "not_observable", f"the workers themselves do not give {check.expect_text} (direct: {direct})"
            )
        if not effect:
            return make(
                "not_observable", f"changing it changes nothing on these workers; router = direct ({routed})"
            )
        verdict: FieldVerdict = (
            "rewritten_harmlessly" if forwarding is not None and forwarding.rewritten else "honoured"
        )
        return make(verdict, f"router answers as the workers do directly ({routed})")
    if not all_reproducible:
        return make(
            "not_observable",
            f"router answer ({routed}) matches no reproducible worker, and some workers are not reproducible",
        )
    if not routed_meets and direct_meets:
        return make("changed_generation", f"router gave {routed}, not {check.expect_text} (direct: {direct})")
    return make("changed_generation", f"router gave {routed}; the workers directly give {direct}")


def probe_request_fields(
    router_url: str,
    worker_urls: Sequence[str],
    model: str,
    *,
    thinking_toggle: str | None = "enable_thinking",
    chat_template_kwargs: Mapping[str, Any] | None = None,
    router_version: str | None = None,
    api_key: str | None = None,
    timeout_s: float = 120.0,
    checks: Sequence[ProbeCheck] | None = None,
) -> RequestFieldProbe:
    """Run every check against the workers (``worker_urls``: the URLs evalpipe reaches them at) and the
    router (its base URL); one request at a time per server, so no answer depends on batching with
    another (the workers are asked in parallel: they are separate servers)."""
    router = router_url.rstrip("/")
    known = FORWARDING.get(router_version or "", {})
    sent = 0
    echoed: bool | None = None
    fields: list[FieldProbe] = []
    for check in checks if checks is not None else default_checks(thinking_toggle):
        obs = Observations()
        test = request_body(model, check.test, chat_template_kwargs)
        control = request_body(model, check.control, chat_template_kwargs)

        def direct(base: str, test: dict[str, Any] = test, control: dict[str, Any] = control) -> list[Answer]:
            return [
                *(_chat(base, test, api_key, timeout_s) for _ in range(2)),
                _chat(base, control, api_key, timeout_s),
            ]

        bases = [url.rstrip("/") for url in worker_urls]
        with ThreadPoolExecutor(max_workers=max(1, len(bases))) as pool:  # workers answer in parallel
            for base, answers in zip(bases, pool.map(direct, bases), strict=True):
                obs.direct[base] = answers[:2]
                obs.control[base] = answers[2]
                sent += 3
        for _ in range(max(2, len(worker_urls))):
            rid = x_request_id(f"probe-{sent:04d}")
            res = fetch.post_json(
                router + "/v1/chat/completions",
                test,
                headers={HEADER: rid},
                timeout=timeout_s,
                api_key=api_key,
            )
            sent += 1
            obs.routed.append(answer_of(res))
            if res.status is not None:
                echoed = (echoed is not False) and res.headers.get(HEADER.lower()) == rid
        fields.append(judge(check, obs, known.get(check.forwarding_key)))
    return RequestFieldProbe(
        router_version=router_version, fields=fields, x_request_id_echoed=echoed, requests_sent=sent
    )


def _chat(base: str, body: dict[str, Any], api_key: str | None, timeout_s: float) -> Answer:
    return answer_of(fetch.post_json(base + "/v1/chat/completions", body, timeout=timeout_s, api_key=api_key))
