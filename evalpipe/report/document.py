"""The report as a list of format-neutral blocks, built from a ``Summary`` only.

``report.md``, ``report.html`` and the terminal view render these blocks (``evalpipe.report.blocks``), so
all three say the same thing; nothing here reads the run directory or recomputes a number — each section
(``evalpipe.report.sections``) formats its part of the summary, and this module puts them in order.
"""

from __future__ import annotations

from collections.abc import Callable

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import Block
from evalpipe.report.sections.configuration import configuration_section
from evalpipe.report.sections.failures import failure_section
from evalpipe.report.sections.findings import findings_section, gates_section
from evalpipe.report.sections.fleet import fleet_section
from evalpipe.report.sections.headline import headline_section
from evalpipe.report.sections.numerics import numerics_section
from evalpipe.report.sections.provenance import limitations_section, provenance_section
from evalpipe.report.sections.request_audit import request_audit_section
from evalpipe.report.sections.results import results_section
from evalpipe.report.sections.samples import reviews_section, samples_section
from evalpipe.report.sections.sampling import sampling_section
from evalpipe.report.sections.speed import speed_section

# Reading order of the report.
SECTIONS: tuple[Callable[[Summary], list[Block]], ...] = (
    headline_section,
    configuration_section,
    fleet_section,
    results_section,
    speed_section,
    numerics_section,
    sampling_section,
    failure_section,
    samples_section,
    reviews_section,
    request_audit_section,
    findings_section,
    gates_section,
    provenance_section,
    limitations_section,
)


def build_document(summary: Summary) -> list[Block]:
    return [block for section in SECTIONS for block in section(summary)]
