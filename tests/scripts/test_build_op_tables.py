"""scripts/build_op_tables.py on small snapshots this test writes and commits itself, and (where a fetched mirror is
named) on the real one, which must give the committed bytes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from atc_wrap.precision.op_tables import COMMON, FAMILIES, OpTable, parse_op_table
from scripts.build_op_tables import main

ROOT = Path(__file__).resolve().parents[2]
DATE = "2022-06-29T09:54:57+00:00"
PLUGIN = """
// REGISTER_CUSTOM_OP("Commented").FrameworkType(TENSORFLOW).OriginOpType("Commented");
REGISTER_CUSTOM_OP("Exp")
    .FrameworkType(TENSORFLOW)
    .OriginOpType("Exp")
    .ParseParamsFn(AutoMappingFn)
    .ImplyType(ImplyType::TVM);
REGISTER_CUSTOM_OP("ReduceMean").FrameworkType(TENSORFLOW).OriginOpType({"Mean", "MeanAlias"})
    .ImplyType(ImplyType::TVM);
REGISTER_CUSTOM_OP("TopK").FrameworkType(TENSORFLOW).OriginOpType("TopKV2").ImplyType(ImplyType::TVM);
REGISTER_CUSTOM_OP("CaffeOnly").FrameworkType(CAFFE).OriginOpType("CaffeOnly").ImplyType(ImplyType::TVM);
/* REGISTER_CUSTOM_OP("Blocked").FrameworkType(TENSORFLOW).OriginOpType("Blocked"); */
"""
AICORE = {
    "ascend310": """[Exp]
input0.name=x
input0.dtype=float16
output0.dtype=float16
[ReduceMeanD]
input0.dtype=float16,float,int8
output0.dtype=float16,float,int8
precision_reduce.flag=false
[TopKD]
input0.dtype=float16
output0.dtype=float16,int32
[Conv2D]
dynamicFormat.flag=true
precision_reduce.flag=true
heavyOp.flag=true
""",
    "ascend910": """# a comment line
[Exp]
input0.dtype=float16,float
output0.dtype=float16,float
[MatMulV2]
input0.dtype=float16,bfloat16,int8
cubeOp.flag=true
[Conv2D]
dynamicFormat.flag=true
[ResizeBilinearV2D]
input0.dtype=float,float16
output0.dtype=float,float
""",
}
# A dynamic-format op's implementation, written for this test in the shape of the snapshot's (conv2d.py): the chip
# decides its dtype columns.
CONV2D_IMPL = """
from impl.util import util_select_op_base
from impl.util.platform_adapter import tbe_platform


def op_select_format(inputs, weights, bias, offset_w, outputs, strides, pads, kernel_name="conv2d"):
    if tbe_platform.get_soc_spec("SHORT_SOC_VERSION") in ("Ascend310",):
        out_dtypes = "float16,int32"
    else:
        out_dtypes = "float32,int32"
    input0 = util_select_op_base.gen_param(classify="input0", name="x", datatype="float16,int8", format="ND,ND")
    output0 = util_select_op_base.gen_param(classify="output0", name="y", datatype=out_dtypes, format="ND,ND")
    return util_select_op_base.get_dynamic_param_in_json([input0, output0])
"""
AICPU = "[TopK]\nopInfo.engine=DNN_VM_AICPU\ninput0.type=DT_FLOAT16,DT_FLOAT,DT_DOUBLE,DT_INT32\n"
CONST2ATTR = 'REGISTER_CONST2ATTR("ReduceMeanD").OriginOpType("ReduceMean").SetConstToAttr(1, "axes", "SetListInt");\n'
TOP_K_PASS = 'static const char* PATTERN = "TopK";\nstatic const char* FUSED = "TopKD";\n'
EXP_PASS = 'static const char* A = "Exp";\nstatic const char* B = "ExpD";\n'  # no ExpD in any table: no rewrite
OP_MAP = """std::map<std::string, std::string> tensorflow_op_map = {
    {"Placeholder", DATA},
    {"Identity", IDENTITY},
};
std::map<std::string, std::string> tensorflow_train_op_map = {
    {"VariableV2", VARIABLE},
};
"""
PARSER_TYPES = 'const char *DATA = "Data";\nconst char *IDENTITY = "Identity";\nconst char *VARIABLE = "Variable";\n'


def commit(repo: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    env = {**os.environ, "GIT_AUTHOR_DATE": DATE, "GIT_COMMITTER_DATE": DATE, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env=env, capture_output=True)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path, str]:
    ops, parser = tmp_path_factory.mktemp("ops"), tmp_path_factory.mktemp("parser")
    files = {f"ops/built-in/tbe/op_info_cfg/ai_core/{family}/aic-{family}-ops-info.ini": AICORE.get(family, "")
             for family in FAMILIES}
    files.update({
        "ops/built-in/aicpu/op_info_cfg/aicpu_kernel/aicpu_kernel.ini": AICPU,
        "ops/built-in/framework/tf_plugin/some_plugins.cc": PLUGIN,
        "ops/built-in/framework/tf_plugin/CMakeLists.txt": 'REGISTER_CUSTOM_OP("NotSource")',
        "ops/built-in/fusion_pass/graph_fusion/ai_core/const2attr/const2attr_fusion_pass.cc": CONST2ATTR,
        "ops/built-in/fusion_pass/graph_fusion/ai_core/top_k_fusion_pass.cc": TOP_K_PASS,
        "ops/built-in/fusion_pass/graph_fusion/ai_core/exp_fusion_pass.cc": EXP_PASS,
        "ops/built-in/tbe/impl/conv2d.py": CONV2D_IMPL,
    })
    ops_commit = commit(ops, files)
    parser_commit = commit(parser, {"parser/common/op_map.cc": OP_MAP, "parser/common/parser_types.cc": PARSER_TYPES})
    return ops / ".git", ops_commit, parser / ".git", parser_commit


def build(snapshots: tuple[Path, str, Path, str], out: Path, short: int = 40) -> dict[str, bytes]:
    ops, ops_commit, parser, parser_commit = snapshots
    main(["--ops-git", str(ops), "--ops-commit", ops_commit[:short], "--parser-git", str(parser),
          "--parser-commit", parser_commit[:short], "--out", str(out)])
    return {path.name: path.read_bytes() for path in sorted(out.iterdir())}


def loaded(out: Path, family: str) -> OpTable:
    return parse_op_table(json.loads((out / f"{COMMON}.json").read_text()),
                          json.loads((out / f"{family}.json").read_text()), family, COMMON)


def test_the_same_snapshot_gives_the_same_bytes(snapshots: tuple[Path, str, Path, str], tmp_path: Path) -> None:
    first = build(snapshots, tmp_path / "a")
    assert set(first) == {f"{stem}.json" for stem in (COMMON, *FAMILIES)}
    assert build(snapshots, tmp_path / "b", short=9) == first


def test_what_the_snapshot_says(snapshots: tuple[Path, str, Path, str], tmp_path: Path) -> None:
    build(snapshots, tmp_path)
    table = loaded(tmp_path, "ascend310")
    mean = table.lookup("MeanAlias")
    assert dict(mean.ascend_ops) == {"ReduceMean": "TVM"} and dict(mean.rewrites) == {"ReduceMean": "ReduceMeanD"}
    assert mean.kernel is not None and mean.kernel.input_dtypes == {"float16", "float32"}
    assert mean.kernel.precision_reduce is False
    top_k = table.lookup("TopKV2")
    assert top_k.kernel is not None and top_k.kernel.op == "TopKD" and top_k.kernel.output_dtypes == {"float16"}
    assert dict(top_k.aicpu) == {"TopK": frozenset({"float16", "float32", "float64"})}
    conv = table.aicore_kernel("Conv2D")  # dynamic format: its op_select_format decides fp16 in, fp16 out here
    assert conv is not None and conv.heavy and conv.precision_reduce is True and conv.from_select_format
    assert (conv.input_dtypes, conv.output_dtypes, conv.pairs) == ({"float16"}, {"float16"},
                                                                   {("float16", "float16")})
    assert table.lookup("Exp").rewrites == {}  # the pass names ExpD, but no table lists it
    assert table.lookup("Placeholder").parser_op == "Data" and not table.lookup("VariableV2").mapped
    for absent in ("Commented", "Blocked", "CaffeOnly", "NotSource"):
        assert absent not in table
    big = loaded(tmp_path, "ascend910")
    assert big.lookup("Exp").kernel.input_dtypes == {"float16", "float32"}  # type: ignore[union-attr]
    matmul = big.aicore_kernel("MatMulV2")
    assert matmul is not None and matmul.cube and matmul.precision_reduce is None
    assert matmul.input_dtypes == {"float16", "bfloat16"} and matmul.pairs is None  # no output0 list to pair with
    assert big.aicore_kernel("Conv2D").pairs == {("float16", "float32")}  # type: ignore[union-attr]
    resize = big.aicore_kernel("ResizeBilinearV2D")  # columns: float -> float, float16 -> float
    assert resize is not None and resize.outputs_for("float16") == {"float32"}


def test_provenance_is_the_full_commit_and_its_date(snapshots: tuple[Path, str, Path, str], tmp_path: Path) -> None:
    build(snapshots, tmp_path, short=9)
    table = loaded(tmp_path, "ascend310")
    assert (table.source.commit, table.parser_source.commit) == (snapshots[1], snapshots[3])
    assert table.source.date == DATE and table.script_version == 2


def test_an_unknown_commit_stops_the_script(snapshots: tuple[Path, str, Path, str], tmp_path: Path) -> None:
    ops, _, parser, parser_commit = snapshots
    with pytest.raises(SystemExit, match=r"git show .*deadbeef"):
        main(["--ops-git", str(ops), "--ops-commit", "deadbeef", "--parser-git", str(parser),
              "--parser-commit", parser_commit, "--out", str(tmp_path)])


@pytest.mark.skipif(not (os.environ.get("INFER_CANN_OPS_GIT") and os.environ.get("INFER_ASCEND_PARSER_GIT")),
                    reason="set INFER_CANN_OPS_GIT and INFER_ASCEND_PARSER_GIT to fetched git directories")
def test_the_real_snapshot_gives_the_committed_files(tmp_path: Path) -> None:
    committed = ROOT / "atc_wrap" / "precision" / "op_tables_data"
    source = json.loads((committed / f"{COMMON}.json").read_text())["source"]
    main(["--ops-git", os.environ["INFER_CANN_OPS_GIT"], "--ops-commit", source["ops"]["commit"],
          "--parser-git", os.environ["INFER_ASCEND_PARSER_GIT"], "--parser-commit", source["parser"]["commit"],
          "--out", str(tmp_path)])
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {p.name: p.read_bytes()
                                                                      for p in committed.iterdir()}
