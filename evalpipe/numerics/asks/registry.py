"""``numerics.ask`` → the way of asking (``evalpipe.numerics.asks``)."""

from __future__ import annotations

from evalpipe.config.numerics import NumericsAsk
from evalpipe.numerics.asks.base import Ask
from evalpipe.numerics.asks.chat import ChatAsk
from evalpipe.numerics.asks.teacher_forced import TeacherForcedAsk

ASKS: dict[NumericsAsk, Ask] = {"chat": ChatAsk(), "teacher_forced": TeacherForcedAsk()}


def ask_for(name: NumericsAsk) -> Ask:
    return ASKS[name]
