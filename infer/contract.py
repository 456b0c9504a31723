"""The model contract, ``model.json``: what every stage after freeze reads instead of asking for node names again.

Paths inside are stored relative to the contract's folder, so a model folder can be moved or copied to an
Ascend server as a whole. A dim freeze left unknown is null in an input's ``shape``; ``converted.gears`` (null for
a static model) says which shapes the converted model takes: `binio.gears.DynamicShape`'s JSON form.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from atc_wrap.target import TARGETS, Target
from binio.atomic import write_json_atomic
from binio.binfile import sha256_file
from binio.document import load_document
from binio.errors import InferError
from binio.fields import Fields, kind
from binio.gears import DynamicShape
from binio.reading import reading
from binio.spec import TensorSpec
from ckpt2pb.kinds import KINDS, SourceKind

if TYPE_CHECKING:
    from atc_wrap.precision.plan import PrecisionPlan

SCHEMA = "infer.model-contract"
SCHEMA_VERSION = 1


class ContractError(InferError):
    """A model.json that is missing, unreadable, foreign, too new, or out of date with its files."""


@dataclass(frozen=True)
class SourceInfo:
    """Where the frozen graph came from."""

    path: str
    kind: SourceKind
    tf_version: str  # the TensorFlow that wrote the source, where it says so; "" when unknown
    frozen_with_tf: str  # the TensorFlow that froze it


@dataclass(frozen=True)
class ConvertedInfo:
    """What `infer convert` made of the frozen pb."""

    target: Target
    path: str  # relative to the contract's folder
    sha256: str
    inputs: tuple[TensorSpec, ...]  # the converted model's own dtypes (fp16 for --input-fp16-nodes, ...)
    outputs: tuple[TensorSpec, ...]
    soc_version: str = ""
    precision_mode: str = ""
    command: tuple[str, ...] = ()  # the exact ATC argv, or () for the stand-in
    settings: dict[str, Any] = field(default_factory=dict)  # converter settings: opset, emulation, ...
    # The precision plan as recorded (`atc_wrap.precision.plan`): each op's dtype on the chip and why; None for a
    # model converted before plans, or for a chip without an operator table. Read through `plan()`.
    precision_plan: dict[str, Any] | None = None
    gears: DynamicShape | None = None  # the shapes it takes when converted with gears or ranges (binio.gears)
    contract_path: Path | None = field(default=None, compare=False)  # the model.json it was read from

    def plan(self) -> PrecisionPlan | None:
        """The recorded plan, checked entry by entry (a refusal names model.json and the entry)."""
        if self.precision_plan is None:
            return None
        # on use: the plan's module loads CANN's operator tables' vocabulary, which dump-bin and run never read
        from atc_wrap.precision.plan import PrecisionPlan

        return PrecisionPlan.from_fields(Fields(self.precision_plan, path=self.contract_path or Path("model.json"),
                                                entry="converted.precision_plan", error=ContractError))

    @property
    def aipp_config(self) -> dict[str, Any] | None:
        """The AIPP config convert recorded (as JSON); None for a model converted without AIPP. Read here, with no
        AIPP module imported, so that a stage can tell whether it needs them."""
        record = self.settings.get("aipp")
        return record["config"] if isinstance(record, dict) and isinstance(record.get("config"), dict) else None


@dataclass(frozen=True)
class ModelContract:
    """The frozen model: its pb, its inputs and outputs, and (after convert) its converted form."""

    path: Path  # where this contract lives; not written into the file
    pb: str  # relative to the contract's folder
    pb_sha256: str
    source: SourceInfo
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    fixed: dict[str, str] = field(default_factory=dict)  # placeholders folded to a value (--set, defaults)
    converted: ConvertedInfo | None = None
    # node -> op type: ops ATC's TF 1.15 parser would not know, and ops that draw random numbers (no converted
    # model reproduces their numbers, so compare's verdict mentions them).
    tf115_unknown_ops: dict[str, str] = field(default_factory=dict)
    random_ops: dict[str, str] = field(default_factory=dict)
    signature_keys: dict[str, str] = field(default_factory=dict)  # tensor -> its SavedModel signature key
    # node -> how freeze put it in inference mode (a batch norm or dropout of a training graph: "batch norm: ...").
    inference_mode: dict[str, str] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def pb_path(self) -> Path:
        return self.folder / self.pb

    @property
    def converted_path(self) -> Path | None:
        return None if self.converted is None else self.folder / self.converted.path

    @property
    def model_inputs(self) -> tuple[TensorSpec, ...]:
        """The inputs as the model that will run takes them: the converted one's when there is one."""
        return self.converted.inputs if self.converted else self.inputs

    @property
    def gears(self) -> DynamicShape | None:
        """The converted model's gears or shape ranges; None for a static (or not yet converted) model."""
        return self.converted.gears if self.converted else None

    @property
    def model_outputs(self) -> tuple[TensorSpec, ...]:
        return self.converted.outputs if self.converted else self.outputs

    def input(self, name: str) -> TensorSpec:
        for spec in self.inputs:
            if name in (spec.name, spec.node):
                return spec
        known = ", ".join(s.name for s in self.inputs)
        raise ContractError(f"{self.path}: no input named {name!r}; inputs are: {known}")

    def with_converted(self, converted: ConvertedInfo | None) -> ModelContract:
        return replace(self, converted=converted)

    def check_pb_unchanged(self) -> None:
        """Refuses a contract whose pb was rewritten or removed since freeze."""
        if not self.pb_path.is_file():
            raise ContractError(f"{self.path}: its frozen graph {self.pb_path} is missing",
                                hint="re-run infer freeze")
        if sha256_file(self.pb_path) != self.pb_sha256:
            raise ContractError(
                f"{self.path}: {self.pb_path.name} changed since freeze (sha256 differs from the contract's)",
                hint="re-run infer freeze so the contract describes the pb it sits beside",
            )

    def check_converted_unchanged(self) -> None:
        if self.converted is None:
            raise ContractError(f"{self.path}: the model has not been converted", hint="run infer convert first")
        path = self.folder / self.converted.path
        if not path.is_file():
            raise ContractError(f"{self.path}: converted model {path} is missing", hint="re-run infer convert")
        if sha256_file(path) != self.converted.sha256:
            raise ContractError(f"{self.path}: {path.name} changed since convert (sha256 differs)",
                                hint="re-run infer convert")

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "source": {"path": self.source.path, "kind": self.source.kind, "tf_version": self.source.tf_version,
                       "frozen_with_tf": self.source.frozen_with_tf},
            "frozen": {"pb": self.pb, "sha256": self.pb_sha256},
            "inputs": [self._tensor_json(s) for s in self.inputs],
            "outputs": [self._tensor_json(s) for s in self.outputs],
            "fixed": dict(self.fixed),
            "tf115_unknown_ops": dict(self.tf115_unknown_ops),
            "random_ops": dict(self.random_ops),
            "inference_mode": dict(self.inference_mode),
            "converted": None,
        }
        if self.converted is not None:
            c = self.converted
            document["converted"] = {
                "target": c.target, "path": c.path, "sha256": c.sha256, "soc_version": c.soc_version,
                "precision_mode": c.precision_mode, "command": list(c.command), "settings": c.settings,
                "inputs": [s.to_json() for s in c.inputs], "outputs": [s.to_json() for s in c.outputs],
                "precision_plan": c.precision_plan,
                "gears": None if c.gears is None else c.gears.to_json(),
            }
        return document

    def _tensor_json(self, spec: TensorSpec) -> dict[str, Any]:
        """A tensor's entry, with its signature key beside its name when the source was a SavedModel signature."""
        document = spec.to_json()
        if spec.name in self.signature_keys:
            document["signature_key"] = self.signature_keys[spec.name]
        return document

    def save(self, path: Path | None = None) -> ModelContract:
        """Writes the contract atomically (to `path`, default its own) and returns it as saved."""
        target = Path(path) if path is not None else self.path
        write_json_atomic(target, self.to_json())
        return replace(self, path=target)


def _specs(fields: Fields, key: str) -> tuple[TensorSpec, ...]:
    items = tuple(TensorSpec.from_fields(item) for item in fields.children(key))
    if not items:
        raise fields.refuse(key, "expected a non-empty list of tensors, found an empty one")
    return items


def as_contract(model: ModelContract | Path | str) -> ModelContract:
    """The contract itself, or the one read from a model.json path (or its folder): what every stage accepts."""
    return model if isinstance(model, ModelContract) else load_contract(model)


def load_contract(path: Path | str) -> ModelContract:
    """Reads a model.json (or the model.json inside a folder), refusing what this version cannot trust."""
    path = Path(path)
    if path.is_dir():
        path = path / "model.json"
    beside = path.parent / "model.json"  # when a model file (.pb, .onnx, .om) is given where its model.json was meant
    data = load_document(path, schema=SCHEMA, version=SCHEMA_VERSION, kind="model contract", short="contract",
                         error=ContractError, missing="no such model contract",
                         missing_hint="infer freeze writes model.json",
                         binary_hint=f"give {beside}" if beside != path and beside.is_file() else None)
    with reading(path):
        return _contract(data, path)


def _contract(data: dict[str, Any], path: Path) -> ModelContract:
    fields = Fields(data, path=path, entry="", error=ContractError)
    source = fields.child("source")
    frozen = fields.child("frozen")
    converted = None
    if fields.has("converted"):
        c = fields.child("converted")
        converted = ConvertedInfo(
            target=cast(Target, c.word("target", TARGETS)), path=c.relative("path", path.parent),
            sha256=c.text("sha256"),
            inputs=_specs(c, "inputs"), outputs=_specs(c, "outputs"),
            soc_version=c.text("soc_version", ""), precision_mode=c.text("precision_mode", ""),
            command=c.texts("command", []), settings=dict(c.mapping("settings", {})),
            precision_plan=dict(c.mapping("precision_plan")) if c.has("precision_plan") else None,
            gears=DynamicShape.from_fields(c.child("gears")) if c.has("gears") else None,
            contract_path=path,
        )
    fixed = fields.mapping("fixed", {})
    return ModelContract(
        path=path,
        pb=frozen.relative("pb", path.parent),
        pb_sha256=frozen.text("sha256"),
        source=SourceInfo(path=source.text("path"), kind=cast(SourceKind, source.word("kind", KINDS)),
                          tf_version=source.text("tf_version", ""), frozen_with_tf=source.text("frozen_with_tf", "")),
        inputs=_specs(fields, "inputs"),
        outputs=_specs(fields, "outputs"),
        fixed={str(k): _fixed_value(fields, k, v) for k, v in fixed.items()},
        converted=converted,
        tf115_unknown_ops=_text_map(fields, "tf115_unknown_ops"),
        random_ops=_text_map(fields, "random_ops"),
        inference_mode=_text_map(fields, "inference_mode"),
        signature_keys={item.text("tensor"): item.text("signature_key")
                        for key in ("inputs", "outputs") for item in fields.children(key)
                        if "signature_key" in item.data},
    )


def _text_map(fields: Fields, key: str) -> dict[str, str]:
    """An optional object of names to texts (ops by node, ...)."""
    mapping = fields.child(key, {})
    return {name: mapping.text(name) for name in mapping.data}


def _fixed_value(fields: Fields, key: str, value: Any) -> str:
    """A placeholder folded at freeze: its value as the text --set took."""
    if isinstance(value, (dict, list)) or value is None:
        raise fields.refuse(f"fixed.{key}", f"expected a value, found {kind(value)}")
    return str(value)
