"""What `infer convert` is asked (`ConvertOptions`): the one declaration of its flags, of its pipeline.toml keys
([convert]) and of their defaults and help. Standard library only (no numpy): `infer convert --help` builds its
flags from it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atc_wrap.precision import DEFAULT_PRECISION_MODE, PRECISION_MODES
from atc_wrap.soc import ASSUMED_SOC_VERSION
from binio.defaults import DEFAULT_TOOL_TIMEOUT_S
from binio.texts import batch_sizes
from infer._option_fields import setting
from infer.aipp.options import AippOptions

TARGETS: tuple[str, ...] = ("om", "onnx")


@dataclass(frozen=True)
class ConvertOptions:
    """The user's choices; empty values leave ATC's defaults. In pipeline.toml: [convert], paths relative to it."""

    target: str | None = setting(None, unset="auto", shown="om where atc is found, else onnx",
                                 help="om (ATC) or onnx (the ONNX Runtime stand-in).")
    use_om: Path | None = setting(None, unset="", help="Record this om, built elsewhere (ATC on another machine), "
                                                      "instead of converting: its inputs and outputs are checked "
                                                      "against the frozen pb's, its own dtypes recorded, and it is "
                                                      "copied into the model folder when outside it.")
    output: Path | None = setting(None, short="-o", toml=False, shown="beside model.json, named after the pb",
                                  help="The converted model's path (.om / .onnx appended when missing).")
    soc_version: str = setting("", shown=f"required for om; the stand-in assumes {ASSUMED_SOC_VERSION}",
                               help="The chip ATC compiles for, e.g. Ascend310P3 (npu-smi info names it); its "
                                    "operator table gives each op's dtype in the precision plan the stand-in "
                                    "emulates, and the pre-check's verdicts.")
    precision_mode: str = setting(DEFAULT_PRECISION_MODE, always=True,  # the report's command says which mode ran
                                  help=f"{', '.join(PRECISION_MODES)} ({DEFAULT_PRECISION_MODE} is ATC's default); "
                                       "the stand-in emulates them.")
    input_fp16_nodes: str = setting("", help='Inputs the model takes as float16: "a;b".')
    output_type: str = setting("", help='FP32, FP16 (every float output) or "node:0:FP16;node2:1:FP32".')
    input_format: str = setting("", shown="the contract's", help="NHWC, NCHW or ND.")
    dynamic_batch: tuple[int, ...] = setting((), parse=batch_sizes,
                                             help="Batch sizes the om accepts, e.g. 1,2,4,8; needs an input with an "
                                                  "unknown batch dim.")
    op_select_implmode: str = setting("", help="high_precision, high_performance, high_precision_for_all or "
                                               "high_performance_for_all (om only).")
    fusion_switch_file: Path | None = setting(None, unset="", help="ATC fusion switch file (om only).")
    keep_dtype: Path | None = setting(None, unset="", help="ATC keep_dtype file (from infer tune-precision): op "
                                                           "names (TF node names) or OpType::Type, one a line, kept "
                                                           "in fp32; emulated by the stand-in.")
    modify_mixlist: Path | None = setting(None, unset="", help="ATC modify_mixlist JSON (black-, white-, gray-list "
                                                               "to-add/to-remove op types); allow_mix_precision "
                                                               "only.")
    customize_dtypes: Path | None = setting(None, unset="", help="ATC customize_dtypes file "
                                                                 "(Opname::InputDtype:...,OutputDtype:... lines), "
                                                                 "applied over keep_dtype.")
    atc_args: tuple[str, ...] = setting((), flag="--atc-arg", repeat=True,
                                        help="One more ATC argument, as --atc-arg=--log=info; repeatable.")
    opset: int | None = setting(None, unset=0, shown="the highest tf2onnx and onnxruntime both handle",
                                help="ONNX opset (onnx only).")
    allow_unknown_soc: bool = setting(False, help="Pass a --soc-version that is not in the known list (a chip newer "
                                                  "than this tool).")
    allow_unsupported: bool = setting(False, help="Go on where the chip's operator table says ATC cannot convert an "
                                                  "op (refused for om, a warning for the stand-in) or cannot build "
                                                  "it in the dtype the mode or a per-op control asks; the table is "
                                                  "a 2022 snapshot, a newer CANN may have the kernel.")
    dry_run: bool = setting(False, toml=False, help="Print the exact ATC command (or what the stand-in would "
                                                    "write) and change nothing.")
    timeout: float = setting(DEFAULT_TOOL_TIMEOUT_S, help="Seconds before a hung ATC is stopped.")
    aipp: AippOptions | None = setting(
        None, inline=True, needs=("these set the preprocessing AIPP does on the NPU",
                                  "add --aipp (or preprocess host-side with infer dump-bin's options)"),
        help="Preprocess on the NPU: aipp.cfg is written beside the model from the color, scale, mean and std "
             "([data.preprocessing] in pipeline.toml) and passed to ATC (--insert_op_conf); the model then takes "
             "uint8 images.")
