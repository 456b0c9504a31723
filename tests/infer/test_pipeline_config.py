"""pipeline.toml: the schema, its one-line refusals, and the template that must stay loadable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infer.pipeline._template import TemplateValues, render_template
from infer.pipeline.config import ConfigError, PipelineConfig, load_config
from tests.cli import run_cli

MINIMAL = """\
[model]
source = "ckpt/model.ckpt"
outputs = ["probs:0"]

[data]
source = "images"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder holding what MINIMAL names: a checkpoint prefix (by its .index) and an image folder."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "model.ckpt.index").write_bytes(b"")
    (tmp_path / "images").mkdir()
    (tmp_path / "labels.txt").write_text("0\n")
    return tmp_path


def _write(folder: Path, text: str) -> Path:
    path = folder / "pipeline.toml"
    path.write_text(text)
    return path


def _error(folder: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(_write(folder, text))
    return caught.value.message


def test_minimal_file_takes_defaults_and_resolves_paths_against_its_folder(project: Path) -> None:
    config = load_config(_write(project, MINIMAL))
    assert config.model.outputs == ("probs:0",)
    assert config.model.freeze.batch is None  # as infer freeze: the graph's own batch (issue 26)
    assert config.convert.precision_mode == "force_fp16"
    assert config.convert.target is None  # "auto": om where ATC is found
    assert config.model_source == project / "ckpt" / "model.ckpt"
    assert config.data_source == str(project / "images")
    assert config.work_dir == project / "work"
    assert config.labels is None


def test_every_section_read_with_toml_types(project: Path) -> None:
    text = MINIMAL + """
[data.preprocessing]
scale = 0.5
mean = [1, 2, 3]

[convert]
precision_mode = "allow_mix_precision"
atc_args = ["--log=error"]

[run]
loop = 3

[compare]
labels = "labels.txt"
thresholds = { cosine = 0.999, "probs:0:kl" = 1 }

[paths]
work_dir = "/tmp/elsewhere"
"""
    config = load_config(_write(project, text.replace('outputs = ["probs:0"]',
                                                      'outputs = ["probs:0"]\nset = { is_training = false, '
                                                      'keep = 0.5 }\nbatch = 8')))
    assert config.model.freeze.assignments == {"is_training": "false", "keep": "0.5"}
    assert config.model.freeze.batch == 8
    assert config.data.dump.image.mean == (1.0, 2.0, 3.0)
    assert config.convert.atc_args == ("--log=error",)
    assert config.run.loop == 3
    assert config.compare.thresholds.texts == ("cosine=0.999", "probs:0:kl=1.0")
    assert config.labels == project / "labels.txt"
    assert config.work_dir == Path("/tmp/elsewhere")


def test_unknown_key_suggests_the_closest(project: Path) -> None:
    message = _error(project, MINIMAL + '[convert]\nprecison_mode = "force_fp32"\n')
    assert message == (f"{project / 'pipeline.toml'}: [convert] precison_mode: unknown key; did you mean "
                       "'precision_mode'? (valid keys: target, use_om, soc_version, precision_mode, input_fp16_nodes, "
                       "output_type, input_format, dynamic_batch, dynamic_image_size, dynamic_dims, shape_range, "
                       "op_select_implmode, fusion_switch_file, "
                       "keep_dtype, modify_mixlist, customize_dtypes, atc_args, opset, allow_unknown_soc, "
                       "allow_unsupported, allow_host_ops, timeout, aipp, aipp_input_format, aipp_src_size, "
                       "aipp_crop, aipp_csc, aipp_config)")


def test_unknown_nested_key(project: Path) -> None:
    message = _error(project, MINIMAL + "[data.preprocessing]\nscal = 0.5\n")
    assert message.startswith(f"{project / 'pipeline.toml'}: [data.preprocessing] scal: unknown key; "
                              "did you mean 'scale'?")


def test_unknown_section_suggests_the_closest(project: Path) -> None:
    message = _error(project, MINIMAL + "[comapre]\ntopk = 1\n")
    assert message == (f"{project / 'pipeline.toml'}: unknown section [comapre]; did you mean [compare]? "
                       "(sections: model, data, convert, run, compare, tune, paths, remote)")


@pytest.mark.parametrize(
    ("addition", "expected"),
    [
        ('batch = "8"', "[model] batch: expected an integer, got a string '8'"),
        ("batch = true", "[model] batch: expected an integer, got a boolean True"),
        ('outputs = "probs:0"', "[model] outputs: expected a list of strings, got a string 'probs:0'"),
    ],
)
def test_wrong_type_in_model(project: Path, addition: str, expected: str) -> None:
    text = MINIMAL.replace('outputs = ["probs:0"]', 'outputs = ["probs:0"]\n' + addition)
    if addition.startswith("outputs"):
        text = MINIMAL.replace('outputs = ["probs:0"]', addition)
    assert _error(project, text) == f"{project / 'pipeline.toml'}: {expected}"


def test_wrong_type_in_a_list_names_the_item(project: Path) -> None:
    message = _error(project, MINIMAL + "[convert]\natc_args = [\"--log=error\", 3]\n")
    assert message == f"{project / 'pipeline.toml'}: [convert] atc_args[1]: expected a string, got an integer 3"


def test_threshold_must_be_a_number(project: Path) -> None:
    message = _error(project, MINIMAL + '[compare]\nthresholds = { cosine = "high" }\n')
    assert message == (f"{project / 'pipeline.toml'}: [compare] thresholds.cosine: expected a number or \"off\", "
                       "got a string 'high'")


def test_threshold_off_lifts_it_and_limits_keep_every_digit(project: Path) -> None:
    config = load_config(_write(project, MINIMAL + '[compare]\nthresholds = { kl = "off", cosine = 0.9999999 }\n'))
    from infer.pipeline._stages import _compare_args

    assert [(s.metric, s.limit) for s in config.compare.thresholds.settings] == [
        ("KullbackLeiblerDivergence", None), ("CosineSimilarity", 0.9999999)]
    assert _compare_args(config) == ["--threshold", "kl=off", "--threshold",
                                     "cosine=0.9999999"]  # :g would have written cosine=1


def test_threshold_on_an_unknown_metric_or_output_is_refused_when_read(project: Path) -> None:
    where = f"{project / 'pipeline.toml'}: [compare] thresholds"
    message = _error(project, MINIMAL + '[compare]\nthresholds = { cosin = 0.999 }\n')
    assert message.startswith(f"{where}.cosin: unknown metric 'cosin' (did you mean 'cosine'?): expected one of ")
    message = _error(project, MINIMAL + '[compare]\nthresholds = { "prob:0:kl" = 0.01 }\n')
    assert message == f"{where}.prob:0:kl: no output named 'prob:0'; [model] outputs are: probs:0"
    config = load_config(_write(project, MINIMAL + '[compare]\nthresholds = { "probs:kl" = 0.01 }\n'))
    assert config.compare.thresholds.texts == ("probs:kl=0.01",)  # the node name of an output selects it too


def test_missing_required_key_and_section(project: Path) -> None:
    no_outputs = MINIMAL.replace('outputs = ["probs:0"]\n', "")
    assert _error(project, no_outputs) == (f"{project / 'pipeline.toml'}: [model] outputs: missing (the tensors the "
                                           "converted model returns)")
    no_data = MINIMAL.split("[data]")[0]
    assert _error(project, no_data) == f"{project / 'pipeline.toml'}: missing section [data]"


def test_missing_files_named(project: Path) -> None:
    assert _error(project, MINIMAL.replace("ckpt/model.ckpt", "ckpt/other.ckpt")) == (
        f"{project / 'pipeline.toml'}: [model] source: no such file, folder or checkpoint prefix: "
        f"{project / 'ckpt' / 'other.ckpt'}")
    assert _error(project, MINIMAL.replace('source = "images"', 'source = "pictures"')) == (
        f"{project / 'pipeline.toml'}: [data] source: no such file or folder: {project / 'pictures'}")
    assert _error(project, MINIMAL + '[compare]\nlabels = "nope.txt"\n') == (
        f"{project / 'pipeline.toml'}: [compare] labels: no such file: {project / 'nope.txt'}")


def test_generator_source_needs_no_file(project: Path) -> None:
    config = load_config(_write(project, MINIMAL.replace('source = "images"', 'source = "random:0"')))
    assert config.data_source == "random:0"


def test_missing_pipeline_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "absent.toml")
    assert caught.value.message == f"{tmp_path / 'absent.toml'}: no such pipeline file"
    message = _error(tmp_path, "[model\n")
    assert message.startswith(f"{tmp_path / 'pipeline.toml'}: not valid TOML (")


def test_cli_prints_one_error_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(project, MINIMAL + "[run]\nbackend = 3\n")
    outcome = run_cli(capsys, "pipeline", "run", str(path))
    assert outcome.code == 2
    assert outcome.error_line == f"error: {path}: [run] backend: expected a string, got an integer 3"
    assert "Traceback" not in outcome.err


def _uncommented(text: str) -> str:
    """The template with every commented-out `key = value` setting switched on, and a commented-out table too
    ([remote])."""
    text = re.sub(r"^# (\[\w+\])$", r"\1", text, flags=re.MULTILINE)
    return re.sub(r"^# (\w+ = [^#\n]*?)([ \t]+#[^\n]*)?$", r"\1", text, flags=re.MULTILINE)


def test_template_loads_and_every_commented_setting_is_a_valid_key(project: Path) -> None:
    values = TemplateValues(source="ckpt/model.ckpt", outputs=("probs:0",), inputs=("images:0",), batch=8,
                            set_values={"is_training": "false"}, data_source="images", scale=1 / 255,
                            labels="labels.txt", switches=("is_training:0",))
    text = render_template(values)
    config = load_config(_write(project, text))
    assert config.model.freeze.batch == 8 and config.model.freeze.inputs == ("images:0",)
    assert config.model.freeze.assignments == {"is_training": "false"}
    assert config.data.dump.image.scale == 1 / 255
    assert config.labels == project / "labels.txt"

    switched_on = _uncommented(text)
    changed = sum(a != b for a, b in zip(text.splitlines(), switched_on.splitlines(), strict=True))
    assert changed >= 20  # the commented settings of [data], [convert], [run] and [compare]
    full = load_config(_write(project, switched_on))  # an unknown or mistyped key would raise here
    defaults = PipelineConfig(path=full.path, model=full.model, data=full.data)
    assert full.convert == defaults.convert
    assert full.run == defaults.run
    assert full.data.dump.image.mean == (0.0,)
    assert full.compare.thresholds.texts == ("cosine=0.999", "probs:0:kl=0.01")
    assert full.compare.expected_from_emulation is True and full.compare.expected_factor == 10.0
    assert full.compare.fail_on_expected is True and not full.compare.allow_same_backend
    assert full.remote is not None and full.remote.host == ("ascend01",)  # [remote]'s example


def test_compare_per_sample_limits_and_switches_reach_the_command(project: Path) -> None:
    from infer.pipeline._stages import _compare_args

    text = MINIMAL + ('[compare]\nthresholds = { "sample:cosine" = 0.99, "sample:probs:0:max_abs" = 0.1 }\n'
                      "allow_same_backend = true\nfail_on_expected = true\n")
    config = load_config(_write(project, text))
    assert config.compare.allow_same_backend and config.compare.fail_on_expected
    assert _compare_args(config) == ["--threshold", "sample:cosine=0.99", "--threshold", "sample:probs:0:max_abs=0.1",
                                     "--allow-same-backend", "--fail-on-expected"]
    message = _error(project, MINIMAL + '[compare]\nthresholds = { "sample:kl" = 0.1 }\n')
    assert message.endswith("sample:kl: KullbackLeiblerDivergence is not measured per sample; a per-sample limit "
                            "takes one of CosineSimilarity, RelativeEuclideanDistance, RootMeanSquareError, "
                            "MaxAbsoluteError")


def test_compare_expected_band_settings_reach_the_command_and_the_options(project: Path) -> None:
    from infer.pipeline._stages import _compare_args

    default = load_config(_write(project, MINIMAL))
    assert default.compare.expected_from_emulation is None  # left out: compare's own default (an om only)
    assert "--expected-from-emulation" not in _compare_args(default)
    assert default.compare.expected_from_emulation is None

    text = MINIMAL + "[compare]\nexpected_from_emulation = true\nexpected_factor = 4\nfail_on_expected = true\n"
    config = load_config(_write(project, text))
    assert _compare_args(config) == ["--expected-from-emulation", "--expected-factor", "4.0", "--fail-on-expected"]
    options = config.compare
    assert (options.expected_from_emulation, options.expected_factor, options.fail_on_expected) == (True, 4.0, True)

    off = load_config(_write(project, MINIMAL + "[compare]\nexpected_from_emulation = false\n"))
    assert _compare_args(off) == ["--no-expected-from-emulation"]
    assert off.compare.expected_from_emulation is False
    message = _error(project, MINIMAL + '[compare]\nexpected_from_emulation = "yes"\n')
    assert message.endswith("[compare] expected_from_emulation: expected a boolean, got a string 'yes'")


def test_aipp_config_must_exist_and_not_come_with_aipp(project: Path) -> None:
    missing = _error(project, MINIMAL + '[convert]\naipp_config = "aipp.cfg"\n')
    assert missing == f"{project / 'pipeline.toml'}: [convert] aipp_config: no such file: {project / 'aipp.cfg'}"
    (project / "aipp.cfg").write_text("aipp_op { aipp_mode: static input_format: RGB888_U8 }\n")
    both = _error(project, MINIMAL + '[convert]\naipp = true\naipp_config = "aipp.cfg"\n')
    assert both.endswith("[convert] aipp = true and aipp_config: aipp makes the config from [data.preprocessing], "
                         "aipp_config reads a written one; give one of them")
    config = load_config(_write(project, MINIMAL + '[convert]\naipp = true\naipp_src_size = [256, 240]\n'))
    assert config.convert.aipp is not None and config.convert.aipp.src_size == (256, 240)


def test_per_op_precision_files_resolve_against_the_file_and_reach_convert(project: Path) -> None:
    from infer.pipeline._calls import convert_options
    from infer.pipeline._stages import _convert_args

    missing = _error(project, MINIMAL + '[convert]\nkeep_dtype = "keep.cfg"\n')
    assert missing == f"{project / 'pipeline.toml'}: [convert] keep_dtype: no such file: {project / 'keep.cfg'}"
    (project / "keep.cfg").write_text("OpType::Sum\n")
    (project / "mix.json").write_text('{"black-list": {"to-add": ["Exp"]}}')
    config = load_config(_write(project, MINIMAL + '[convert]\nprecision_mode = "allow_mix_precision"\n'
                                                   'keep_dtype = "keep.cfg"\nmodify_mixlist = "mix.json"\n'))
    options = convert_options(config)
    assert (options.keep_dtype, options.modify_mixlist, options.customize_dtypes) == (
        project / "keep.cfg", project / "mix.json", None)
    args = _convert_args(config)
    assert args[args.index("--keep-dtype") + 1] == str(project / "keep.cfg")
    assert args[args.index("--modify-mixlist") + 1] == str(project / "mix.json")


# --- the pipeline and the command line agree (issue 14: one options type per stage) ---------------------------

def test_color_is_read_like_the_command_line_takes_it(project: Path) -> None:
    from infer.pipeline._calls import image_options
    from infer.pipeline._stages import _dump_args

    config = load_config(_write(project, MINIMAL + '[data.preprocessing]\ncolor = "bgr"\n'))
    assert config.data.dump.image.color == "BGR"  # was kept as "bgr" and decoded as RGB
    assert image_options(config).color == "BGR"
    assert _dump_args(config) == ["--color", "BGR"]
    message = _error(project, MINIMAL + '[data.preprocessing]\ncolor = "GBR"\n')
    assert message == f"{project / 'pipeline.toml'}: [data.preprocessing] color: expected RGB or BGR, got 'GBR'"


def test_image_options_refuse_an_unknown_color_whoever_builds_them() -> None:
    from binio.errors import InferError
    from infer.preprocessing import ImageOptions

    assert ImageOptions(color="bgr").color == "BGR"  # type: ignore[arg-type]  # any case is taken
    with pytest.raises(InferError, match=r"^--color GBR: expected RGB or BGR$"):
        ImageOptions(color="GBR")  # type: ignore[arg-type]  # refused: what the test shows


def test_run_defaults_are_the_command_lines(project: Path) -> None:
    from infer.pipeline._stages import _run_args
    from infer.run.options import RunOptions

    config = load_config(_write(project, MINIMAL))
    assert config.run.warmup == RunOptions().warmup == 1  # was 0 in the pipeline, 1 on the command line
    assert config.run.device is None and _run_args(config) == []
    none = load_config(_write(project, MINIMAL + "[run]\nwarmup = 0\n"))
    assert _run_args(none) == ["--warmup", "0"]  # was left out, so the printed command warmed up once


def test_device_zero_is_a_device(project: Path) -> None:
    from infer.pipeline._stages import _run_args, run_options

    config = load_config(_write(project, MINIMAL + "[run]\ndevice = 0\n"))
    assert config.run.device == 0  # was 0 = "unset"
    assert run_options(config).device == 0
    assert _run_args(config) == ["--device", "0"]
    assert run_options(load_config(_write(project, MINIMAL))).device is None


def test_soc_version_default_is_the_command_lines(project: Path) -> None:
    from infer.convert._convert import ConvertOptions
    from infer.pipeline._calls import convert_options
    from infer.pipeline._stages import _convert_args

    config = load_config(_write(project, MINIMAL))
    assert config.convert.soc_version == ConvertOptions().soc_version == ""  # was Ascend310 in the pipeline only
    assert convert_options(config).soc_version == ""
    assert "--soc-version" not in _convert_args(config)
    chosen = load_config(_write(project, MINIMAL + '[convert]\nsoc_version = "Ascend310P3"\n'))
    assert _convert_args(chosen)[:2] == ["--soc-version", "Ascend310P3"]


def test_every_run_key_is_the_flag_of_its_name(project: Path) -> None:
    from infer.pipeline._stages import _run_args

    text = MINIMAL + '[run]\nbackend = "onnxrt"\ndevice = 1\nloop = 3\nwarmup = 2\nthreads = 4\n'
    assert _run_args(load_config(_write(project, text))) == [
        "--backend", "onnxrt", "--device", "1", "--loop", "3", "--warmup", "2", "--threads", "4"]


@pytest.mark.parametrize(("table", "expected"), [
    ("[run]\nloop = 0\n", "[run] loop: expected 1 or more, got 0"),
    ("[run]\nthreads = -2\n", "[run] threads: expected 1 or more (leave it out for the framework's default), got -2"),
    ("[compare]\ntopk = 0\n", "[compare] topk: expected 1 or more, got 0"),
    ("[compare]\nexpected_factor = 0.5\n", "[compare] expected_factor: expected 1 or more, got 0.5"),
    # A message of another shape than `--flag VALUE: reason` is kept whole, both flags named.
    ("[compare]\nfail_on_expected = true\nexpected_from_emulation = false\n",
     "[compare] --fail-on-expected with --no-expected-from-emulation: the band it fails on would not be computed"),
])
def test_a_value_the_command_refuses_is_refused_when_the_file_is_read(project: Path, table: str,
                                                                        expected: str) -> None:
    """The options' own check (the command line's) refuses it before any stage runs, said as the file's key."""
    assert _error(project, MINIMAL + table) == f"{project / 'pipeline.toml'}: {expected}"


@pytest.mark.parametrize(("table", "expected"), [
    ('[convert]\nprecision_mode = "force_fp61"\n', "[convert] precision_mode: expected one of force_fp16, force_fp32, "
     "allow_fp32_to_fp16, must_keep_origin_dtype, allow_mix_precision, got 'force_fp61'"),
    ('[convert]\ntarget = "tpu"\n', "[convert] target: expected one of om, onnx, got 'tpu'"),
    ('[convert]\nop_select_implmode = "fast"\n', "[convert] op_select_implmode: expected one of high_precision, "
     "high_performance, high_precision_for_all, high_performance_for_all, got 'fast'"),
    ('[convert]\ninput_format = "HWC"\n', "[convert] input_format: expected one of NHWC, NCHW, ND, got 'HWC'"),
    ('[convert]\nmodify_mixlist = "mix.json"\n', "[convert] modify_mixlist: ATC takes it only with --precision-mode "
     "allow_mix_precision, not force_fp16, got 'mix.json'"),
])
def test_a_convert_setting_wrong_whatever_the_model_is_refused_when_the_file_is_read(
        project: Path, table: str, expected: str) -> None:
    """What needs no model (the mode, the target, the implmode, the input format, --modify-mixlist's mode) is
    checked as ConvertOptions are built: the file is refused as it is read, naming the key and the words it takes."""
    assert _error(project, MINIMAL + table) == f"{project / 'pipeline.toml'}: {expected}"


def test_a_bad_precision_mode_stops_the_pipeline_before_freeze(project: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(project, MINIMAL + '[convert]\nprecision_mode = "force_fp61"\n')
    outcome = run_cli(capsys, "pipeline", "run", str(path))
    assert outcome.code == 2
    assert outcome.error_line.startswith(f"error: {path}: [convert] precision_mode: expected one of force_fp16, ")
    assert not (project / "work").exists()  # nothing ran: freeze would have written work/model


def test_gear_tables_walk_one_gear_each(project: Path) -> None:
    """[convert]'s gears as TOML lists (or ATC's text): the pipeline walks each, dump-bin set to it."""
    from infer.pipeline._gears import pipeline_gears

    config = load_config(_write(project, MINIMAL + "[convert]\ndynamic_image_size = [[16, 16], [24, 32]]\n"))
    gears = pipeline_gears(config)
    assert [(g.tag, g.label, g.config.data.dump.image_size) for g in gears] == [
        ("16x16", "image size 16x16", (16, 16)), ("24x32", "image size 24x32", (24, 32))]
    config = load_config(_write(project, MINIMAL + '[convert]\ndynamic_dims = "1,128;4,256"\n'))
    assert [(g.tag, g.config.data.dump.dims) for g in pipeline_gears(config)] == [("d1_128", (1, 128)),
                                                                                 ("d4_256", (4, 256))]
    assert pipeline_gears(load_config(_write(project, MINIMAL))) == ()
    message = _error(project, MINIMAL + "[convert]\ndynamic_image_size = [[16, 16], [24]]\n")
    assert message == (f"{project / 'pipeline.toml'}: [convert] dynamic_image_size '16,16;24': expected 2 values "
                       "per gear, found 1 in '24'")
