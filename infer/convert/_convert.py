"""`infer convert`: the frozen pb of a contract -> an Ascend .om through ATC, or the ONNX Runtime stand-in.

The contract and the options become one plan first (`infer.convert._plan`), where everything is checked; then the
converter runs from the plan (ATC's argv, or the stand-in), and the contract is saved with what was made
(`infer.convert._record`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from atc_wrap.atc.command import atc_argv
from atc_wrap.atc.run import find_atc, require_atc, run_atc, run_here
from atc_wrap.plan import ConversionPlan
from atc_wrap.standin.convert import convert_to_onnx
from atc_wrap.standin.emulation import Emulation
from binio.atomic import write_bytes_atomic
from binio.steps import OnStep, no_steps
from infer.contract import ModelContract, as_contract
from infer.convert._om_record import with_om_record
from infer.convert._plan import plan_conversion
from infer.convert._record import converted_info
from infer.convert._use_om import use_om
from infer.convert.options import ConvertOptions
from infer.convert.result import ConvertResult
from infer.remote import AtcOnHost, atc_on_host, remote_given


def convert_model(model: ModelContract | Path | str, options: ConvertOptions | None = None, *,
                  on_step: OnStep = no_steps) -> ConvertResult:
    """Converts the contract's pb per `options` and saves the contract with its `converted` section. `on_step`
    hears each step as it starts (the CLI shows them on a terminal)."""
    contract = as_contract(model)
    options = options or ConvertOptions()
    contract.check_pb_unchanged()
    if options.use_om is not None:
        return use_om(contract, options)
    if options.remote is not None and remote_given(options.remote):
        # ATC on an Ascend host: the same conversion, planned for the chip the host has, its argv run there
        with atc_on_host(options.remote, contract, options.soc_version, on_step) as (host, soc, said):
            options = replace(options, soc_version=soc)
            result = _convert_om(contract, plan_conversion(contract, options, on_step=on_step), options, on_step, host)
            return replace(result, findings=(said, *result.findings))
    plan = plan_conversion(contract, options, on_step=on_step)
    if plan.target == "onnx":
        return _convert_onnx(contract, plan, options, on_step)
    return _convert_om(contract, plan, options, on_step)


def _result(contract: ModelContract, plan: ConversionPlan, *, command: tuple[str, ...] = (), dry_run: bool = False,
            seconds: float = 0.0, notes: tuple[str, ...] = ()) -> ConvertResult:
    return ConvertResult(contract=contract, target=plan.target, artefact=plan.artefact, target_reason=plan.reason,
                         command=command, dry_run=dry_run, ignored=plan.ignored, notes=plan.notes + notes,
                         seconds=seconds, aipp_file=plan.aipp_file, plan=plan.precision, findings=plan.findings)


def _write_aipp(plan: ConversionPlan) -> bytes | None:
    """Writes aipp.cfg; returns what was there before (None: nothing), for `_restore_aipp`."""
    if plan.aipp_file is None:
        return None
    before = plan.aipp_file.read_bytes() if plan.aipp_file.is_file() else None
    write_bytes_atomic(plan.aipp_file, plan.aipp_text.encode("utf-8"))
    return before


def _restore_aipp(destination: Path | None, before: bytes | None) -> None:
    """After a failed ATC run: aipp.cfg as it was, so it still belongs to the model the contract describes."""
    if destination is None:
        return
    if before is None:
        destination.unlink(missing_ok=True)
    else:
        write_bytes_atomic(destination, before)


def _convert_om(contract: ModelContract, plan: ConversionPlan, options: ConvertOptions,
                on_step: OnStep, host: AtcOnHost | None = None) -> ConvertResult:
    """ATC here, or on the Ascend host `host` runs it on (`infer.remote`), the argv the same."""
    atc = host.atc if host is not None else find_atc() if options.dry_run else require_atc()
    argv = atc_argv(plan, str(atc) if atc is not None else "atc")
    if options.dry_run:
        return _result(contract, plan, command=host.shown(argv) if host is not None else argv, dry_run=True)
    before = _write_aipp(plan)  # ATC reads it: written first, put back if ATC fails
    try:
        on_step(f"running ATC for {plan.chip} (minutes on a large model)")
        run = run_atc(argv, plan.artefact, timeout=options.timeout, execute=host if host is not None else run_here)
    except BaseException:
        _restore_aipp(plan.aipp_file, before)
        raise
    converted = converted_info(contract, plan, run, atc=atc, aipp=options.aipp)
    if host is not None and host.record is not None:  # where the om was built, with what, what was sent
        converted = replace(converted, settings={**converted.settings, "remote": host.record.to_json()})
    converted = with_om_record(contract, converted)
    saved = contract.with_converted(converted).save()
    return _result(saved, plan, command=run.argv, seconds=run.seconds)


def _convert_onnx(contract: ModelContract, plan: ConversionPlan, options: ConvertOptions,
                  on_step: OnStep) -> ConvertResult:
    import time

    if options.dry_run:
        return _result(contract, plan, dry_run=True)
    start = time.monotonic()
    conversion = convert_to_onnx(plan, on_step=on_step)
    _write_aipp(plan)
    saved = contract.with_converted(converted_info(contract, plan, conversion, aipp=options.aipp)).save()
    return _result(saved, plan, seconds=time.monotonic() - start, notes=_not_applied(conversion.emulation))


def _not_applied(emulation: Emulation) -> tuple[str, ...]:
    """The per-op controls the plan lists that reached no ONNX node of the stand-in (an op tf2onnx folded away):
    said, so that the plan's "per-op controls" line is not taken for what the stand-in computed."""
    return tuple(f"--{record.source.replace('_', '-')} {record.node} ({record.op_type}): no ONNX node of the "
                 "stand-in computes it (tf2onnx folded it away), so the stand-in changes nothing for it; ATC applies "
                 "it to the TF op" for record in emulation.per_op if not record.onnx_nodes)
