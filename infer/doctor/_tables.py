"""The operator tables doctor reports: how old they are, and which chips each family's table covers, read from the
committed json (`atc_wrap.precision.op_tables`) without CANN."""

from __future__ import annotations

from atc_wrap.atc.soc import ASSUMED_SOC_VERSION, KNOWN_SOC_VERSIONS
from atc_wrap.precision.op_tables import FAMILIES, OpTableError, family_of, load_op_table
from infer.doctor.result import OpTablesCheck


def check_op_tables() -> OpTablesCheck:
    """The tables' date and source, per family the --soc-version spellings it covers, and the chips it does not."""
    try:
        tables = [load_op_table(family) for family in FAMILIES]
    except OpTableError as exc:
        return OpTablesCheck(date="", source="", families=(), uncovered=(), assumed=ASSUMED_SOC_VERSION,
                             error=exc.message)
    covered: dict[str, list[str]] = {family: [] for family in FAMILIES}
    uncovered = []
    for chip in KNOWN_SOC_VERSIONS:
        try:
            covered[family_of(chip)].append(chip)
        except OpTableError:
            uncovered.append(chip)
    first = tables[0]
    return OpTablesCheck(date=first.date, source=f"{first.source.repository}@{first.source.commit[:12]}",
                         families=tuple((family, tuple(chips)) for family, chips in covered.items()),
                         uncovered=tuple(uncovered), assumed=ASSUMED_SOC_VERSION)
