"""The precision plan: for every float op of the frozen pb, the dtype ATC runs it in on one chip under one precision
mode, and why: the mode's documented rule, the chip's operator table (`atc_wrap.precision.op_tables`) and the user's
per-op controls on top (`atc_wrap.precision.op_controls`). The stand-in emulates the plan
(`atc_wrap.standin.emulation`), the pre-check reads its engines (`atc_wrap.precision.precheck`), tune-precision searches
among the ops it can keep in fp32, and model.json records it (`converted.precision_plan`). docs/precision-plan.md states
the rules and which of them are guesses.

The rules, per float op whose AI Core kernel computes in the float dtypes K (fp16, fp32; "both" where the table
leaves them to the op's select-format function), origin fp32:

- force_fp16: fp16 where K has it, else fp32 (a kernel with fp32 only);
- allow_fp32_to_fp16: matrix ops fp16; vector ops fp32 where K has it, else fp16;
- force_fp32: matrix ops fp16 in, fp32 out where K allows it, else fp32, else fp16; vector ops fp32 where K has it,
  else fp16, but a black-listed one goes to its fp32 AI CPU kernel (and fails without one);
- must_keep_origin_dtype: fp32 where K has it, else the fp32 AI CPU kernel, else ATC fails;
- allow_mix_precision: white fp16, black fp32, gray as the op before it (fp16 when every tensor it reads from
  another op is fp16), each within what K has (a black op without fp32 goes to AI CPU where it has a kernel).

An op with no AI Core kernel but an AI CPU one runs there, in its own dtype, whatever the mode; an op the table does
not know (no mapping, or no kernel on either engine) is emulated as before the tables (`LEGACY`), and named so.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, cast

from atc_wrap.errors import ConvertError
from atc_wrap.precision.modes import KEEP_DTYPE_MODES, PRECISION_MODES, PrecisionMode
from atc_wrap.precision.op_controls import MIXLIST_MODE, Compute, OpControls, OpPrecision, RuleSource
from atc_wrap.precision.op_tables import AiCoreKernel, OpSupport, OpTable
from binio.fields import Fields
from binio.graph_types import GraphDef
from binio.vocabulary import values_of

PLAN_FORMAT = 1
FP16, FP32 = "float16", "float32"
# The cube unit's ops: ATC's documentation treats "matrix" ops apart in allow_fp32_to_fp16 and force_fp32 but
# lists none. This is a choice: the convolutions, their backprops and transposes, the matrix products and the
# fused RNN cells, plus every op the table itself flags `cubeOp` (which leaves out Conv2D and DepthwiseConv2D).
MATRIX_OPS: frozenset[str] = frozenset({
    "Conv2D", "Conv2DCompress", "DepthwiseConv2D", "Conv3D", "Conv2DTranspose", "Conv2DTransposeD",
    "Conv2DBackpropInput", "Conv2DBackpropInputD", "Conv3DBackpropInput", "Conv3DBackpropInputD",
    "Conv3DTranspose", "Conv3DTransposeD", "Deconvolution", "MatMul", "MatMulV2", "MatMulV2Compress",
    "BatchMatMul", "BatchMatMulV2", "FullyConnection", "FullyConnectionCompress", "GEMM",
    "DynamicRNN", "DynamicRNNV2", "DynamicGRU", "DynamicGRUV2", "DynamicLSTM", "DynamicLSTMV2", "BasicLSTMCell",
})
# Where an op runs: ATC's AI Core, its AI CPU (slow: the host-like cores beside it), nowhere ATC can compile it
# (no mapping, or no kernel on either engine), or host/graph ops that compute nothing (Identity, Reshape, Shape).
OpEngine = Literal["aicore", "aicpu", "none"]
OP_ENGINES: tuple[str, ...] = values_of(OpEngine)
AICORE: Final = "aicore"
AICPU: Final = "aicpu"
NOWHERE: Final = "none"
# Which rule gave an op its dtype: the mode's, the table's (the kernel lacks the mode's dtype), the fallback (the
# table does not place the op), or one of the user's per-op controls.
UserControl = Literal["modify_mixlist", "keep_dtype", "customize_dtypes"]
USER_CONTROLS: tuple[str, ...] = values_of(UserControl)
DecidedBy = Literal["mode", "table", "fallback", UserControl]
DECIDED_BY: tuple[str, ...] = values_of(DecidedBy)
MODE: Final = "mode"
TABLE: Final = "table"
FALLBACK: Final = "fallback"
# An op the plan cannot place: the emulation computes it as it did before the tables, by the mode alone.
LEGACY: Final = "legacy"
# Where the emulation rounds float tensors, by the mode alone (`storage_for`): every one, by op type, none.
Storage = Literal["fp16", "mixed", "fp32"]
# allow_mix_precision's lists, as the table (and --modify-mixlist) puts an op on one; "" for an op without a kernel
MixList = Literal["white", "black", "gray", ""]
MIX_LISTS: tuple[str, ...] = values_of(MixList)
WHITE: Final = "white"
BLACK: Final = "black"
GRAY: Final = "gray"
_FLOAT_ENUMS: Mapping[int, str] = {1: FP32, 2: "float64", 19: FP16, 14: "bfloat16"}  # TF DataType numbers
_DTYPE_ATTRS = ("T", "dtype", "SrcT", "DstT", "Tparams", "U", "TI")
# Why an AI Core kernel's dtypes are not known: the table leaves them to the op's op_select_format, which
# scripts/build_op_tables.py could not read them off for the chip (docs/op-tables.md).
UNKNOWN_KERNEL = "its kernel's dtypes are unknown: op_select_format does not decide them"
# Types that compute nothing: the graph's own structure. NoOp carries no tensor (only control edges).
_NO_COMPUTE = frozenset({"Placeholder", "Const", "NoOp"})
# The modes' preferred dtype for a vector op (None: allow_mix_precision decides by list).
_PREFERRED: Mapping[str, str | None] = {"force_fp16": FP16, "allow_fp32_to_fp16": FP32, "force_fp32": FP32,
                                         "must_keep_origin_dtype": FP32, MIXLIST_MODE: None}


@dataclass(frozen=True)
class PlannedOp:
    """One TF node: where it runs, in which dtypes, and which rule said so."""

    node: str
    op_type: str
    ascend_op: str  # the Ascend op reached (the kernel's: ReduceMeanD), or "" where none is
    engine: OpEngine
    input_dtype: str  # float16 | float32 | "" (LEGACY: as the mode alone says): binio's dtype names
    output_dtype: str
    decided_by: DecidedBy
    why: str
    kernel_dtypes: tuple[str, ...] | None = ()  # the AI Core kernel's float dtypes; None: unknown (dynamic format)
    mix_list: MixList = ""
    matrix: bool = False
    refused: str = ""  # why ATC would refuse this op as planned; "" when it would not
    # --customize-dtypes' lists, per input and output position, where it gave them (the first ones are above)
    input_dtypes: tuple[str, ...] = ()
    output_dtypes: tuple[str, ...] = ()

    @property
    def dtype(self) -> str:
        """``float16``, ``float32``, ``float16->float32`` (fp16 in, fp32 out) or ``""`` (LEGACY)."""
        if self.input_dtype == self.output_dtype:
            return self.input_dtype
        return f"{self.input_dtype}->{self.output_dtype}"

    @property
    def legacy(self) -> bool:
        return not self.input_dtype

    @property
    def can_keep_fp32(self) -> bool:
        """Whether --keep-dtype can keep the op in fp32 on this chip: an AI Core kernel with fp32 (or dtypes the
        table does not say), an op computed in its own dtype on AI CPU, or one the table does not know."""
        if self.engine == AICORE:
            return self.kernel_dtypes is None or FP32 in self.kernel_dtypes
        return True

    @property
    def computes_fp16(self) -> bool:
        return self.input_dtype == FP16

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "node": self.node, "op_type": self.op_type, "ascend_op": self.ascend_op, "engine": self.engine,
            "dtype": self.dtype or LEGACY, "input_dtype": self.input_dtype, "output_dtype": self.output_dtype,
            "decided_by": self.decided_by, "why": self.why,
            "kernel_dtypes": None if self.kernel_dtypes is None else list(self.kernel_dtypes),
            "mix_list": self.mix_list, "matrix": self.matrix}
        if self.refused:
            found["refused"] = self.refused
        if self.input_dtypes or self.output_dtypes:
            found.update(input_dtypes=list(self.input_dtypes), output_dtypes=list(self.output_dtypes))
        return found

    @staticmethod
    def from_fields(fields: Fields) -> PlannedOp:
        kernel = fields.data.get("kernel_dtypes")
        dtypes = None if kernel is None else fields.texts("kernel_dtypes")
        return PlannedOp(node=fields.text("node"), op_type=fields.text("op_type"),
                         ascend_op=fields.text("ascend_op", ""),
                         engine=cast(OpEngine, fields.word("engine", OP_ENGINES)),
                         input_dtype=fields.text("input_dtype"), output_dtype=fields.text("output_dtype"),
                         decided_by=cast(DecidedBy, fields.word("decided_by", DECIDED_BY)),
                         why=fields.text("why", ""), kernel_dtypes=dtypes,
                         mix_list=cast(MixList, fields.word("mix_list", MIX_LISTS, "")),
                         matrix=fields.flag("matrix", False),
                         refused=fields.text("refused", ""), input_dtypes=fields.texts("input_dtypes", []),
                         output_dtypes=fields.texts("output_dtypes", []))


@dataclass(frozen=True)
class PrecisionPlan:
    """The plan of one conversion: the chip and table it was made from, and each float op's entry, in graph
    order."""

    precision_mode: PrecisionMode
    chip: str  # the --soc_version the table was chosen by
    family: str  # the table's family (ascend310, ...)
    chip_assumed: bool  # True: `chip` is the stand-in's assumption (no --soc-version, or one without a table)
    table_date: str  # the operator snapshot's day (YYYY-MM-DD)
    table_source: str  # repository@commit of the snapshot
    ops: tuple[PlannedOp, ...]
    allowed_unsupported: tuple[str, ...] = ()  # refusals --allow-unsupported let through, one text each
    chip_asked: str = ""  # the --soc-version given, where the plan assumed another chip (no table for it)

    def op(self, node: str) -> PlannedOp | None:
        return next((entry for entry in self.ops if entry.node == node), None)

    @property
    def refused(self) -> tuple[PlannedOp, ...]:
        return tuple(entry for entry in self.ops if entry.refused)

    def op_precision(self) -> dict[str, OpPrecision]:
        """TF node -> how the stand-in computes it (`atc_wrap.standin.emulation`): every planned op; the user's controls
        keep their source, so the emulation's record lists them as it did."""
        found: dict[str, OpPrecision] = {}
        for entry in self.ops:
            source: RuleSource = cast(UserControl, entry.decided_by) if entry.decided_by in USER_CONTROLS else "plan"
            if entry.legacy:
                found[entry.node] = OpPrecision(entry.node, entry.op_type, LEGACY, "fallback")
            elif entry.input_dtypes or entry.output_dtypes:  # --customize-dtypes, position by position
                found[entry.node] = OpPrecision(entry.node, entry.op_type, _compute_of(entry), source,
                                                input_dtypes=entry.input_dtypes or (entry.input_dtype,),
                                                output_dtypes=entry.output_dtypes or (entry.output_dtype,))
            elif entry.input_dtype == entry.output_dtype:
                compute: Compute = "fp16" if entry.input_dtype == FP16 else "fp32"
                found[entry.node] = OpPrecision(entry.node, entry.op_type, compute, source)
            else:
                found[entry.node] = OpPrecision(entry.node, entry.op_type, "follow", source,
                                                input_dtypes=(entry.input_dtype,),
                                                output_dtypes=(entry.output_dtype,))
        return found

    def where(self) -> str:
        """``force_fp32 on Ascend310``, with why where the chip is assumed: ``(assumed: no --soc-version given)``,
        or ``(assumed: no operator table for Ascend910_9391)``."""
        why = f"no operator table for {self.chip_asked}" if self.chip_asked else "no --soc-version given"
        assumed = f" (assumed: {why})" if self.chip_assumed else ""
        return f"{self.precision_mode} on {self.chip}{assumed}"

    def summary(self) -> tuple[str, ...]:
        """A few lines for `infer convert`: counts, the ops off the mode's preferred dtype and why, AI CPU ops,
        the ops the table does not know."""
        placed = [e for e in self.ops if not e.legacy]
        counts = {kind: sum(1 for e in placed if e.dtype == kind) for kind in (FP16, FP32, f"{FP16}->{FP32}")}
        parts = [f"{counts[FP16]} in fp16", f"{counts[FP32]} in fp32"]
        if counts[f"{FP16}->{FP32}"]:
            parts.append(f"{counts[f'{FP16}->{FP32}']} fp16 in, fp32 out")
        lines = [f"precision plan: {self.where()}, operator table of {self.table_date}: {_ops(len(self.ops))} on "
                 "floats, " + ", ".join(parts)]
        off = [e for e in placed if e.decided_by == TABLE and e.engine == AICORE]
        if off:
            dtypes = sorted({e.dtype for e in off})
            runs = "runs" if len(off) == 1 else "run"
            lines.append(f"under {self.where()}, {_ops(len(off))} still {runs} in {' / '.join(map(_short, dtypes))}: "
                         + _grouped(off, lambda e: _short_why(e)))
        unconfirmed = [e for e in placed if e.engine == AICORE and e.kernel_dtypes is None]
        if unconfirmed:
            lines.append(f"{_ops(len(unconfirmed))} whose kernel dtypes are unknown (op_select_format does not decide "
                         f"them on {self.family}), planned as the mode prefers, unconfirmed: "
                         + _grouped(unconfirmed, lambda e: e.dtype and _short(e.dtype)))
        legacy = [e for e in self.ops if e.legacy]
        if legacy:
            lines.append(f"{_ops(len(legacy))} not placed by the table, emulated as the mode alone says (as "
                         "before the tables): " + ", ".join(f"{e.node} ({e.op_type})" for e in legacy[:8])
                         + (f", ... ({len(legacy) - 8} more)" if len(legacy) > 8 else ""))
        user = [e for e in self.ops if e.decided_by in USER_CONTROLS]
        if user:
            lines.append("per-op controls: " + _grouped(user, lambda e: f"{e.dtype} by {e.decided_by}"))
        for text in self.allowed_unsupported:
            lines.append(f"--allow-unsupported: {text}")
        return tuple(lines)

    def to_json(self) -> dict[str, Any]:
        return {"format": PLAN_FORMAT, "precision_mode": self.precision_mode, "chip": self.chip,
                "family": self.family, "chip_assumed": self.chip_assumed, "chip_asked": self.chip_asked,
                "table": {"date": self.table_date, "source": self.table_source},
                "allowed_unsupported": list(self.allowed_unsupported),
                "ops": [entry.to_json() for entry in self.ops]}

    @staticmethod
    def from_fields(fields: Fields) -> PrecisionPlan:
        """The plan as model.json records it (`fields` is the `precision_plan` object); refused, naming the entry,
        where it is not one this version writes."""
        found = fields.integer("format")
        if found != PLAN_FORMAT:
            raise fields.refuse("format", f"expected precision plan format {PLAN_FORMAT}, found {found}")
        table = fields.child("table")
        return PrecisionPlan(
            precision_mode=cast(PrecisionMode, fields.word("precision_mode", PRECISION_MODES)),
            chip=fields.text("chip"), family=fields.text("family"),
            chip_assumed=fields.flag("chip_assumed"), table_date=table.text("date"),
            table_source=table.text("source"), ops=tuple(PlannedOp.from_fields(op) for op in fields.children("ops")),
            allowed_unsupported=fields.texts("allowed_unsupported", []), chip_asked=fields.text("chip_asked", ""))


def _ops(count: int) -> str:
    return f"{count} op" if count == 1 else f"{count} ops"


def _short(dtype: str) -> str:
    """float16 -> fp16, float16->float32 -> fp16 in, fp32 out."""
    if "->" in dtype:
        return " in, ".join(_short(part) for part in dtype.split("->")) + " out"
    return {FP16: "fp16", FP32: "fp32"}.get(dtype, dtype)


def _short_why(entry: PlannedOp) -> str:
    kernel = entry.kernel_dtypes
    if kernel is not None and FP32 not in kernel:
        return "no fp32 kernel"
    if kernel is not None and FP16 not in kernel:
        return "no fp16 kernel"
    return entry.why


def _grouped(entries: Iterable[PlannedOp], reason: Any) -> str:
    """``Exp x2 (no fp32 kernel), MaxPool (no fp32 kernel)``: by op type, in first-seen order."""
    groups: dict[tuple[str, str], int] = {}
    for entry in entries:
        key = (entry.op_type, str(reason(entry)))
        groups[key] = groups.get(key, 0) + 1
    return ", ".join(f"{kind}{f' x{count}' if count > 1 else ''} ({why})" for (kind, why), count in groups.items())


def storage_for(mode: PrecisionMode) -> Storage:
    """Where the emulation rounded float tensors before the tables (`LEGACY`): fp16 (every one), mixed (by op
    type: `atc_wrap.standin.emulation.FP32_OP_TYPES` kept, `FP16_OP_TYPES` always rounded, others as their
    inputs) or fp32 (none)."""
    if mode in ("force_fp16", "allow_fp32_to_fp16"):
        return "fp16"
    return "mixed" if mode == MIXLIST_MODE else "fp32"


# ---- the planner ----


def float_dtype(node: Any) -> str | None:
    """The float dtype a TF node computes in, from its type attributes (T, dtype, SrcT...); None for an op on
    integers, strings or booleans only."""
    for name in _DTYPE_ATTRS:
        if name in node.attr:
            found = _FLOAT_ENUMS.get(int(node.attr[name].type))
            if found is not None:
                return found
    return None


def _kernel_floats(kernel: AiCoreKernel) -> tuple[str, ...] | None:
    """The kernel's float dtypes among fp16 and fp32: its first input's, or its first output's where that input is
    not a float (Select's condition); None where the table leaves them to compile time."""
    if kernel.input_dtypes is None or kernel.output_dtypes is None:
        return None
    dtypes = kernel.input_dtypes if kernel.input_dtypes & {FP16, FP32} else kernel.output_dtypes
    return tuple(sorted(dtypes & {FP16, FP32}))


def _gives(kernel: AiCoreKernel | None, dtype_in: str, dtype_out: str) -> bool:
    """Whether the kernel takes `dtype_in` and gives `dtype_out` (its column pairs, else its dtype sets; True where
    neither is known)."""
    if kernel is None or kernel.output_dtypes is None:
        return True
    outputs = kernel.outputs_for(dtype_in)
    return dtype_out in (outputs if outputs is not None else kernel.output_dtypes)


def _kernel_output(kernel: AiCoreKernel | None, dtype_in: str, wanted: str) -> str:
    """The float dtype the kernel gives out for `dtype_in` in: `wanted` where it can, else its one float output for
    that input (ResizeBilinearV2D on Ascend310: fp16 in, fp32 out). An input it pairs with no float output (ArgMax:
    an index) or with several others, or columns not known, leave `wanted`."""
    outputs = kernel.outputs_for(dtype_in) if kernel is not None else None
    if not outputs or wanted in outputs or len(outputs & {FP16, FP32}) != 1:
        return wanted
    return next(iter(outputs & {FP16, FP32}))


def _aicpu_kernel(support: OpSupport) -> tuple[str, ...] | None:
    """The AI CPU kernel's float dtypes: from the open kernel list where the op is in it; () where an op of the
    type is registered for AI CPU without dtypes known (its own dtype is taken as supported); None: no kernel."""
    for op in support.ascend_ops:
        if op in support.aicpu and support.aicpu[op] & {FP16, FP32}:
            return tuple(sorted(support.aicpu[op] & {FP16, FP32}))
    if any(kind == "AI_CPU" for kind in support.ascend_ops.values()):
        return ()
    return None


def _aicpu_has(dtypes: tuple[str, ...] | None, wanted: str) -> bool:
    return dtypes is not None and (not dtypes or wanted in dtypes)


def _mix_list(kernel: AiCoreKernel) -> MixList:
    lists: dict[bool | None, MixList] = {True: WHITE, False: BLACK, None: GRAY}
    return lists[kernel.precision_reduce]


@dataclass
class _Placed:
    """What the table says of one node before any mode is applied."""

    support: OpSupport
    engine: OpEngine
    kernel: AiCoreKernel | None
    floats: tuple[str, ...] | None  # the AI Core kernel's float dtypes (None: unknown)
    aicpu: tuple[str, ...] | None
    names: frozenset[str] = field(default_factory=frozenset)  # the TF type and the Ascend ops it reaches


def place(support: OpSupport) -> _Placed:
    """The engine a float op of `support`'s type gets on the table's chip, before any mode: AI Core where its
    kernel computes a float, else AI CPU where it has a kernel, else none."""
    kernel = support.kernel
    names = frozenset({support.tf_type, *support.ascend_ops, *support.rewrites.values()})
    aicpu = _aicpu_kernel(support)
    if kernel is not None:
        floats = _kernel_floats(kernel)
        if floats is None or floats:
            return _Placed(support, AICORE, kernel, floats, aicpu, names)
    if aicpu is not None:
        return _Placed(support, AICPU, None, (), aicpu, names)
    return _Placed(support, NOWHERE, None, (), None, names)


class _Planner:
    def __init__(self, graph_def: GraphDef, table: OpTable, mode: PrecisionMode, controls: OpControls,
                 fp16_inputs: Set[str]) -> None:
        self.table = table
        self.mode = mode
        self.controls = controls
        self.fp16_inputs = fp16_inputs
        self.nodes = {node.name: node for node in graph_def.node}
        self.order = _topological(graph_def)
        self.state: dict[str, str] = {}  # node -> fp16 | fp32 | const: what its float outputs hold

    def plan(self) -> tuple[PlannedOp, ...]:
        planned: list[PlannedOp] = []
        for name in self.order:
            node = self.nodes[name]
            dtype = float_dtype(node)
            if node.op == "Const":
                self.state[name] = "const"
                continue
            if node.op == "Placeholder":
                self.state[name] = FP16 if name in self.fp16_inputs else FP32
                continue
            if dtype is None or node.op in _NO_COMPUTE:
                continue
            support = self.table.lookup(node.op)
            placed = place(support)
            if support.parser_builtin and placed.kernel is None:
                self.state[name] = self._merged(node)  # the parser's own op (Identity, Reshape): moves values
                continue
            entry = self._controlled(self._entry(node, dtype, placed), placed)
            planned.append(entry)
            self.state[name] = entry.output_dtype or self._legacy_state(node)
        return tuple(planned)

    # -- the tensors an op reads --

    def _inputs(self, node: Any) -> list[str]:
        return [name for name in (_producer(i) for i in node.input if not i.startswith("^")) if name in self.nodes]

    def _merged(self, node: Any) -> str:
        """What a node that moves values holds: fp32 if it reads an fp32 tensor, fp16 if it reads only fp16 ones
        (constants aside), const if only constants."""
        states = [self.state.get(name) for name in self._inputs(node)]
        active = [s for s in states if s in (FP16, FP32)]
        if not active:
            return "const" if states else FP32
        return FP32 if FP32 in active else FP16

    def _legacy_state(self, node: Any) -> str:
        storage = storage_for(self.mode)
        return FP16 if storage == "fp16" else FP32 if storage == "fp32" else self._merged(node)

    # -- the mode's rule --

    def _entry(self, node: Any, origin: str, placed: _Placed) -> PlannedOp:
        support, kernel = placed.support, placed.kernel
        base = dict(node=node.name, op_type=node.op, kernel_dtypes=placed.floats,
                    matrix=kernel is not None and (kernel.op in MATRIX_OPS or kernel.cube))
        if placed.engine == NOWHERE:
            what = ("no mapping in ATC's TF parser" if not support.mapped
                    else f"no kernel on AI Core nor AI CPU for {self.table.family}")
            return PlannedOp(**base, ascend_op=next(iter(support.ascend_ops), ""), engine=NOWHERE, input_dtype="",
                             output_dtype="", decided_by=FALLBACK,
                             why=f"{what}: emulated as {self.mode} alone says (as before the tables)")
        if placed.engine == AICPU:
            own = origin if origin in (FP16, FP32) else FP32
            op = next((o for o, kind in support.ascend_ops.items() if kind == "AI_CPU"), next(iter(support.ascend_ops)))
            return PlannedOp(**base, ascend_op=op, engine=AICPU, input_dtype=own, output_dtype=own,
                             decided_by=TABLE,
                             why="no AI Core kernel: AI CPU computes it in its own dtype (slow on the device)")
        assert kernel is not None
        base["ascend_op"] = kernel.op
        base["mix_list"] = self._list_of(placed)
        return self._rule(node, origin, placed, base)

    def _list_of(self, placed: _Placed) -> MixList:
        assert placed.kernel is not None
        listed = _mix_list(placed.kernel)
        if self.mode != MIXLIST_MODE:
            return listed
        changes = self.controls.mixlist
        for kind in ("black-list", "white-list", "gray-list"):
            if placed.names & set(changes.removed.get(kind, ())) and listed == kind.split("-")[0]:
                listed = GRAY
        for kind in ("gray-list", "black-list", "white-list"):
            if placed.names & set(changes.added.get(kind, ())):
                listed = cast(MixList, kind.split("-")[0])  # black-list -> black
        return listed

    def _rule(self, node: Any, origin: str, placed: _Placed, base: dict[str, Any]) -> PlannedOp:
        floats = placed.floats
        has16 = floats is None or FP16 in floats
        has32 = floats is None or FP32 in floats
        unknown = (f" ({UNKNOWN_KERNEL} on {self.table.family}: planned as the mode prefers, unconfirmed)"
                   if floats is None else "")
        mode, matrix = self.mode, base["matrix"]
        kind = "matrix op" if matrix else "vector op"
        # A conversion (Cast: SrcT -> DstT) gives the dtype it is asked for; its kernel's columns pair every dtype
        # with another, which says nothing of the op's own output
        kernel = None if "DstT" in node.attr else placed.kernel

        def done(dtype_in: str, dtype_out: str, decided: DecidedBy, why: str, refused: str = "",
                 engine: OpEngine = AICORE) -> PlannedOp:
            given = _kernel_output(kernel, dtype_in, dtype_out) if engine == AICORE else dtype_out
            if given != dtype_out:  # the kernel gives another dtype out for that input (ResizeBilinearV2D)
                why = f"{why}; its kernel gives {_short(given)} out for {_short(dtype_in)} in"
                decided = TABLE if decided == MODE else decided
            return PlannedOp(**base, engine=engine, input_dtype=dtype_in, output_dtype=given,
                             decided_by=decided, why=why + unknown, refused=refused)

        if origin == FP16 and mode != "force_fp32":
            if has16:
                return done(FP16, FP16, MODE, f"{mode}: an fp16 op stays fp16")
            return done(FP32, FP32, TABLE, f"{mode}: an fp16 op whose kernel has no fp16 runs in fp32")
        if mode == "force_fp16":
            if has16:
                return done(FP16, FP16, MODE, "force_fp16: fp16 wherever the kernel has it")
            return done(FP32, FP32, TABLE, "force_fp16: the kernel has fp32 only")
        if mode == "allow_fp32_to_fp16":
            if matrix:
                return (done(FP16, FP16, MODE, "allow_fp32_to_fp16: a matrix op is lowered to fp16") if has16
                        else done(FP32, FP32, TABLE, "allow_fp32_to_fp16: a matrix op whose kernel has fp32 only"))
            if has32:
                return done(FP32, FP32, MODE, "allow_fp32_to_fp16: a vector op keeps fp32 where its kernel has it")
            return done(FP16, FP16, TABLE, "allow_fp32_to_fp16: no fp32 kernel, lowered to fp16")
        if mode == "force_fp32":
            if matrix:
                out32 = _gives(placed.kernel, FP16, FP32)
                if has16 and out32:
                    return done(FP16, FP32, MODE, "force_fp32: a matrix op takes fp16 in and gives fp32 out")
                if has32:
                    return done(FP32, FP32, TABLE, "force_fp32: a matrix op without fp16-in fp32-out runs in fp32")
                return done(FP16, FP16, TABLE, "force_fp32: a matrix op with fp16 only")
            if has32:
                return done(FP32, FP32, MODE, f"force_fp32: a {kind} runs in fp32 where its kernel has it")
            if base["mix_list"] == BLACK:
                return self._to_aicpu(node, placed, base, "force_fp32: black-listed with no fp32 AI Core kernel",
                                      done)
            return done(FP16, FP16, TABLE, "force_fp32: no fp32 kernel, stays fp16")
        if mode == "must_keep_origin_dtype":
            if has32:
                return done(FP32, FP32, MODE, "must_keep_origin_dtype: fp32 as the graph has it")
            return self._to_aicpu(node, placed, base, "must_keep_origin_dtype: no fp32 AI Core kernel", done)
        return self._mixed(node, placed, base, has16, has32, done)

    def _to_aicpu(self, node: Any, placed: _Placed, base: dict[str, Any], why: str, done: Any) -> PlannedOp:
        """ATC's documented escape for an fp32 op its AI Core cannot keep: the fp32 AI CPU kernel, else failure."""
        if _aicpu_has(placed.aicpu, FP32):
            return done(FP32, FP32, TABLE, f"{why}: its fp32 AI CPU kernel (slow on the device)", engine=AICPU)
        refused = (f"{node.name} ({node.op} -> {base['ascend_op']}): {why} and none on AI CPU known to the table: "
                   "ATC fails")
        return done(FP32, FP32, TABLE, f"{why}, none on AI CPU: ATC fails (emulated in fp32)", refused=refused,
                    engine=NOWHERE)

    def _mixed(self, node: Any, placed: _Placed, base: dict[str, Any], has16: bool, has32: bool,
               done: Any) -> PlannedOp:
        listed = base["mix_list"]
        decided = "modify_mixlist" if listed != _mix_list(placed.kernel) else MODE  # type: ignore[arg-type]
        if listed == WHITE:
            return (done(FP16, FP16, decided, "allow_mix_precision: white list, lowered to fp16") if has16
                    else done(FP32, FP32, TABLE, "allow_mix_precision: white list, but the kernel has fp32 only"))
        if listed == BLACK:
            if has32:
                return done(FP32, FP32, decided, "allow_mix_precision: black list, kept in fp32")
            if _aicpu_has(placed.aicpu, FP32):
                return done(FP32, FP32, TABLE, "allow_mix_precision: black list with no fp32 AI Core kernel: its "
                            "fp32 AI CPU kernel (slow on the device)", engine=AICPU)
            return done(FP16, FP16, TABLE, "allow_mix_precision: black list, but no fp32 kernel: fp16")
        states = [self.state.get(name) for name in self._inputs(node)]
        active = [s for s in states if s in (FP16, FP32)]
        before = FP16 if active and all(s == FP16 for s in active) else FP32
        if before == FP16 and not has16:
            return done(FP32, FP32, TABLE, "allow_mix_precision: gray list after fp16, but the kernel has fp32 only")
        if before == FP32 and not has32:
            return done(FP16, FP16, TABLE, "allow_mix_precision: gray list after fp32, but no fp32 kernel")
        after = ("the ops before it are fp16" if before == FP16 else
                 "an op before it is fp32" if active else "it reads no op's output (the model's input is fp32)")
        return done(before, before, decided, f"allow_mix_precision: gray list, as the op before it ({after})")

    # -- the user's controls, applied over the mode in ATC's order --

    def _controlled(self, entry: PlannedOp, placed: _Placed) -> PlannedOp:
        node = self.nodes[entry.node]
        names = placed.names if placed.engine != NOWHERE or placed.support.mapped else frozenset({node.op})
        keep = self.controls.keep_dtype
        if self.mode in KEEP_DTYPE_MODES and (entry.node in keep.names or names & set(keep.types)):
            entry = self._set(entry, FP32, FP32, "keep_dtype", "--keep-dtype keeps it in fp32")
        rules = [r for r in self.controls.customize if r.by_type and r.target in names]
        rules += [r for r in self.controls.customize if not r.by_type and r.target == entry.node]
        for rule in rules:
            # The plan tracks the op's first float input and output; integer dtypes are ATC's to apply.
            given_in = next(iter(rule.input_dtypes[:1]), "")
            given_out = next(iter(rule.output_dtypes[:1]), "")
            dtype_in = given_in if given_in in (FP16, FP32) else entry.input_dtype or given_out
            dtype_out = given_out if given_out in (FP16, FP32) else entry.output_dtype or dtype_in
            if dtype_in in (FP16, FP32) and dtype_out in (FP16, FP32):
                entry = replace(self._set(entry, dtype_in, dtype_out, "customize_dtypes",
                                          f"--customize-dtypes: {rule.describe()}"),
                                input_dtypes=_floats_only(rule.input_dtypes, dtype_in),
                                output_dtypes=_floats_only(rule.output_dtypes, dtype_out))
        return entry

    def _set(self, entry: PlannedOp, dtype_in: str, dtype_out: str, control: UserControl, why: str) -> PlannedOp:
        refused = entry.refused
        wanted = {dtype_in, dtype_out}
        kernel = entry.kernel_dtypes
        if entry.engine == AICORE and kernel is not None:
            missing = sorted(wanted - set(kernel))
            if missing:
                have = ", ".join(kernel) or "no float dtype"
                refused = (f"{entry.node} ({entry.op_type} -> {entry.ascend_op}): {control} asks for "
                           f"{' and '.join(missing)}, but its AI Core kernel on {self.table.family} computes "
                           f"{have} only: ATC cannot")
        return replace(entry, input_dtype=dtype_in, output_dtype=dtype_out, decided_by=control, why=why,
                       refused=refused)


def _floats_only(dtypes: tuple[str, ...], default: str) -> tuple[str, ...]:
    """A control's per-position dtypes as the stand-in emulates them: an integer position as the op's float one."""
    return tuple(d if d in (FP16, FP32) else default for d in dtypes)


def _compute_of(entry: PlannedOp) -> Compute:
    dtypes = {*entry.input_dtypes, *entry.output_dtypes, entry.input_dtype, entry.output_dtype}
    return "fp16" if dtypes == {FP16} else "fp32" if FP16 not in dtypes else "follow"


def _producer(tensor: str) -> str:
    return tensor.split(":", 1)[0]


def _topological(graph_def: GraphDef) -> list[str]:
    """Node names with every node after the nodes it reads (Kahn's order); a cycle (v1 loops) keeps the rest in
    the graph's own order."""
    names = [node.name for node in graph_def.node]
    known = set(names)
    readers: dict[str, list[str]] = {}
    waiting: dict[str, int] = {}
    for node in graph_def.node:
        sources = {_producer(i.lstrip("^")) for i in node.input} & known
        waiting[node.name] = len(sources)
        for source in sources:
            readers.setdefault(source, []).append(node.name)
    ready = deque(name for name in names if waiting[name] == 0)
    order: list[str] = []
    while ready:
        name = ready.popleft()
        order.append(name)
        for reader in readers.get(name, ()):
            waiting[reader] -= 1
            if waiting[reader] == 0:
                ready.append(reader)
    placed = set(order)
    return order + [name for name in names if name not in placed]


def plan_precision(graph_def: GraphDef, table: OpTable, precision_mode: PrecisionMode, *, chip: str,
                   chip_assumed: bool = False, controls: OpControls | None = None,
                   fp16_inputs: Set[str] = frozenset(), chip_asked: str = "") -> PrecisionPlan:
    """The plan of `graph_def` (a frozen pb's GraphDef) for `chip` (whose family's `table` it is) under
    `precision_mode`, with the per-op `controls` (checked against the graph already) applied over the mode;
    `fp16_inputs` are the input node names the model takes as float16; `chip_asked`, the chip given where `chip` is
    assumed in its place. Refusals are recorded, not raised: the caller decides (`PlannedOp.refused`,
    `refuse_planned`)."""
    ops = _Planner(graph_def, table, precision_mode, controls or OpControls(), fp16_inputs).plan()
    return PrecisionPlan(precision_mode=precision_mode, chip=chip, family=table.family, chip_assumed=chip_assumed,
                         table_date=table.date, table_source=f"{table.source.repository}@{table.source.commit}",
                         ops=ops, chip_asked=chip_asked)


def refuse_planned(plan: PrecisionPlan, *, allow_unsupported: bool) -> PrecisionPlan:
    """Raises, naming every op, where ATC would refuse the plan (an op the mode or a control needs in a dtype the
    chip has no kernel for); with `allow_unsupported` the plan goes on, the refusals recorded."""
    refused = plan.refused
    if not refused:
        return plan
    texts = tuple(entry.refused for entry in refused)
    if allow_unsupported:
        return replace(plan, allowed_unsupported=texts)
    shown = "; ".join(texts[:5]) + (f"; ... ({len(texts) - 5} more)" if len(texts) > 5 else "")
    raise ConvertError(f"{plan.where()}: {_ops(len(texts))} ATC cannot build as asked: {shown}",
                       hint=f"another precision mode or chip, or leave those ops out of the control file; the "
                            f"operator table is of {plan.table_date} and a newer CANN may have the kernel: "
                            "--allow-unsupported goes on (the stand-in then computes them in fp32)")


def ascend_names(graph_def: GraphDef, table: OpTable) -> frozenset[str]:
    """The Ascend op types the pb's TF types reach (plugin ops and their rewrites), which an ``OpType::`` entry
    of a control file may name besides the TF types."""
    found: set[str] = set()
    for kind in {node.op for node in graph_def.node}:
        support = table.lookup(kind)
        found.update(support.ascend_ops)
        found.update(support.rewrites.values())
    return frozenset(found)
