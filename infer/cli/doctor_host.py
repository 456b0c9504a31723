"""`infer doctor --host`: what an Ascend host offers, as `infer doctor` shows this machine."""

from __future__ import annotations

from infer.cli.console import print_json, show
from infer.remote.options import RemoteOptions


def _mark(ok: bool | None) -> str:
    return "ok" if ok else "--" if ok is None else "!!"


def _free(kb: int | None) -> str:
    return "free space unknown" if kb is None else f"{kb / 1e6:.1f} GB free"


def doctor_host(remote: RemoteOptions, *, as_json: bool) -> None:
    # on use: the survey's modules (and numpy's through atc_wrap), which `infer --help` must not import
    from infer.remote import survey_host

    survey = survey_host(remote)
    if as_json:
        print_json(survey.to_json())
        return
    show(f"{survey.host} (ssh, one connection; {survey.seconds:.1f} s to connect and ask)")
    show(f"  ok working folder   {survey.workdir} ({_free(survey.free_kb)})")
    if survey.env_script:
        how = "--env-script" if survey.env_given else "found there"
        others = [s for s in survey.env_scripts if s != survey.env_script]
        also = f"; also there: {', '.join(others)}" if others else ""
        show(f"  ok env script       {survey.env_script} ({how}{also})")
    else:
        show("  -- env script       none of CANN's set_env.sh found (the login's environment is used as it is)")
    cann = f"CANN {survey.cann_version}" if survey.cann_version else "CANN version unknown (no version.info)"
    if survey.atc:
        note = "" if survey.cann_supported else "; older than 5.0: not supported"
        show(f"  {_mark(survey.cann_supported)} atc               {survey.atc} ({cann}{note})")
    else:
        show("  -- atc               not found (convert --host needs CANN's toolkit there)")
    show(f"  ok msame             {survey.msame}" if survey.msame else "  -- msame             not found")
    if survey.ais_bench:
        version = f" {survey.ais_bench_version}" if survey.ais_bench_version else ""
        show(f"  ok ais_bench        {survey.python3} -m ais_bench{version}")
    else:
        show(f"  -- ais_bench        not importable by {survey.python3 or 'python3 (none found)'}")
    npu = survey.npu_smi
    if npu is not None and npu.chips:
        socs = ", ".join(npu.soc_versions) or "no chip ATC knows"
        show(f"  ok npu-smi          {len(npu.chips)} NPU chip(s): {npu.describe()} (--soc-version {socs})")
    elif survey.npu_smi_path:
        show(f"  !! npu-smi          {survey.npu_smi_error or 'lists no NPU'}")
    else:
        show("  -- npu-smi          not found (no NPU driver: convert --host needs --soc-version)")
    why = "the host has rsync" if survey.transfer == "rsync" else (
        "rsync is not on the host" if not survey.has_rsync else "rsync is not on this machine")
    show(f"  ok files            {survey.transfer} ({why})")
    show("what will run there")
    show(f"  convert  {'ATC (pb -> om)' if survey.atc else 'nothing: no atc'}")
    runners = [name for name, found in (("msame", survey.msame), ("ais_bench", survey.ais_bench)) if found]
    show(f"  run      {' or '.join(runners) + ' on the NPU' if runners else 'nothing: no msame or ais_bench'}")
