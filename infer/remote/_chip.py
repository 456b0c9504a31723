"""The chip ATC compiles for on a host: ``--soc-version`` as given, checked against the host's NPUs, or, left out,
the one `npu-smi info` reports there (``310P3`` -> ``Ascend310P3``). Refused before ATC runs: a chip the host does
not have (its om would not load there), a host with several kinds of chip (the user picks), and a name ATC does
not know (npu-smi's ``310B`` names no --soc_version)."""

from __future__ import annotations

from infer.remote.npu_smi import NpuSmiInfo
from infer.remote.options import RemoteError


def host_soc_version(host: str, npu_smi: NpuSmiInfo | None, why_none: str, asked: str) -> tuple[str, str]:
    """(the soc version to compile for, one line saying where it came from)."""
    if npu_smi is None or not npu_smi.chips:
        missing = why_none or ("npu-smi is not on the host" if npu_smi is None else "npu-smi info lists no NPU")
        if not asked:
            raise RemoteError(f"{host}: --soc-version: {missing}, so the host's chip is not known",
                              hint="give --soc-version (npu-smi info names the chip on the machine that has it: "
                                   "e.g. Ascend310P3)")
        return asked, f"{host}: --soc-version {asked} as given ({missing}: not checked against its NPUs)"
    described = npu_smi.describe()
    if asked:
        if asked not in npu_smi.soc_versions:
            raise RemoteError(f"{host}: --soc-version {asked}: the host's NPUs are {described} (npu-smi info); an om "
                              "built for another chip does not load there",
                              hint="leave --soc-version out to build for the host's chip, or convert for that chip "
                                   "on a host that has it")
        return asked, f"{host}: --soc-version {asked}, which the host has ({described})"
    socs = npu_smi.soc_versions
    if not socs:
        raise RemoteError(f"{host}: npu-smi names the host's chip {', '.join(npu_smi.names)}, which is no "
                          "--soc_version ATC knows", hint="give --soc-version (e.g. Ascend310B1 for a 310B1)")
    if len(socs) > 1:
        raise RemoteError(f"{host}: the host has several kinds of NPU ({described}): --soc-version says which "
                          "to build for", hint=f"e.g. --soc-version {socs[0]}")
    return socs[0], f"{host}: --soc-version {socs[0]}, the chip npu-smi info reports there ({described})"
