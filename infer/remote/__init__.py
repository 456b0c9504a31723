"""Ascend hosts reached over SSH: ATC, msame and ais_bench run there, infer's stages here (docs/remote.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.remote._atc import AtcOnHost as AtcOnHost
    from infer.remote._atc import atc_on_host as atc_on_host
    from infer.remote._ssh import held_connections as held_connections
    from infer.remote._tools import ToolsOnHost as ToolsOnHost
    from infer.remote.npu_smi import NpuChip as NpuChip
    from infer.remote.npu_smi import NpuSmiInfo as NpuSmiInfo
    from infer.remote.npu_smi import parse_npu_smi_info as parse_npu_smi_info
    from infer.remote.options import RemoteError as RemoteError
    from infer.remote.options import RemoteOptions as RemoteOptions
    from infer.remote.options import remote_given as remote_given
    from infer.remote.record import RemoteRecord as RemoteRecord
    from infer.remote.record import Traffic as Traffic
    from infer.remote.record import merged_remote as merged_remote
    from infer.remote.survey import HostSurvey as HostSurvey
    from infer.remote.survey import survey_host as survey_host


__getattr__, __dir__ = lazy_exports(__name__)
