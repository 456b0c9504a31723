"""Finding and loading a model source: checkpoint prefix or folder, .meta, frozen .pb, SavedModel, Keras file.

Whatever the kind, the result is one `LoadedSource`: a GraphDef, plus where its variables' values come from
(a checkpoint prefix and the saver that reads it), so inspect and freeze treat every kind as one graph.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from binio.errors import InferError, excerpt, first_line
from binio.graph_types import GraphDef
from binio.reading import parse_json
from binio.regular import refuse_special
from binio.spec import node_name
from ckpt2pb.errors import SourceError, tensorflow_reason
from ckpt2pb.host_ops import ALLOW_FLAG, HostOp, acting
from ckpt2pb.kinds import SourceKind
from ckpt2pb.prefix import CheckpointPrefix
from ckpt2pb.protobuf import HostOpPolicy, checked_graph, parse_protobuf
from ckpt2pb.surgery import rename_node
from ckpt2pb.verify import session_config

# Which side of a signature (or of a model) a tensor is on.
Role = Literal["input", "output"]
_DATA_SUFFIX = re.compile(r"\.data-\d{5}-of-\d{5}$")
_SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")


@dataclass(frozen=True)
class SignatureTensor:
    """One entry of a SavedModel's serving signature: the key users know (`note`) and the graph tensor."""

    key: str
    tensor: str
    role: Role


@dataclass(frozen=True)
class LoadedSource:
    """A model as one graph, with where its variables come from."""

    path: Path  # what the user named
    kind: SourceKind
    graph_def: GraphDef  # tensorflow GraphDef; `_output_shapes` attributes dropped
    meta_graph: Any | None = None  # the MetaGraphDef (saver, collections) for checkpoints and SavedModels
    prefix: CheckpointPrefix | None = None  # the checkpoint prefix the variables are restored from
    tf_version: str = ""  # the TensorFlow (or Keras) that wrote the source, where it says so
    signature: tuple[SignatureTensor, ...] = ()  # a SavedModel's serving signature, keys to tensors
    signature_name: str = ""  # its key in the SavedModel (serving_default)
    other_signatures: tuple[str, ...] = ()  # the SavedModel's other signatures' keys, which are not read
    note: str = ""  # how the source was read, where it was not the usual way (a fallback)
    # The ops that act on the host when run (`ckpt2pb.host_ops`), anywhere in the graph and its functions, the
    # saver's own marked; the graph is inert (`make_inert`): importing it evaluates none of them.
    host_ops: tuple[HostOp, ...] = ()

    def signature_tensor(self, name: str, role: Role) -> str | None:
        """The tensor a signature key names (`note` -> `StatefulPartitionedCall:1`), or None."""
        return next((item.tensor for item in self.signature if item.key == name and item.role == role), None)

    def layer_output(self, name: str) -> str | None:
        """The signature output a layer's name stands for: the one output computed in a scope of that name (Keras 3
        keys its outputs `output_0`, ..., and uniquifies the layer's scope, `probs_1`); None if not exactly one."""
        found = {item.tensor for item in self.signature if item.role == "output"
                 and name in _layer_names(computed_by(self.graph_def, item.tensor))}
        return found.pop() if len(found) == 1 else None

    @property
    def has_variables(self) -> bool:
        return any(node.op in VARIABLE_OPS for node in self.graph_def.node)


VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp", "AutoReloadVariable"})
_PASSING_OPS = frozenset({"Identity", "IdentityN", "Snapshot"})
_GENERIC_KEY = re.compile(r"^output_\d+$")  # what tf.function and Keras 3's export key an unnamed output


def computed_by(graph_def: GraphDef, tensor: str) -> str:
    """The node that computes `tensor`, past the Identity nodes a signature puts over it
    (`Identity` <- `StatefulPartitionedCall/functional_1/probs_1/Softmax`)."""
    nodes = {node.name: node for node in graph_def.node}
    node = nodes.get(node_name(tensor))
    for _ in range(64):
        data = [ref for ref in node.input if not ref.startswith("^")] if node is not None else []
        if node is None or node.op not in _PASSING_OPS or len(data) != 1 or node_name(data[0]) not in nodes:
            break
        node = nodes[node_name(data[0])]
    return node.name if node is not None else node_name(tensor)


def _layer_names(node: str) -> set[str]:
    """The layer a node belongs to, by its scope (`model/probs/Softmax` -> probs; Keras 3's `probs_1` -> probs_1,
    probs)."""
    scope = node.rpartition("/")[0].rpartition("/")[2]
    return {scope, re.sub(r"_\d+$", "", scope)} - {""}


def _checkpoint_prefix_for(text: str) -> CheckpointPrefix | None:
    """`x/model.ckpt.index`, `.meta`, `.data-00000-of-00001` or the prefix itself -> the prefix, if one exists.
    `text` is the path as the user wrote it: `run_dir/.meta` names the prefix `run_dir/`."""
    for suffix in (".index", ".meta"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
            break
    prefix = CheckpointPrefix.from_text(_DATA_SUFFIX.sub("", text))
    if prefix.file(".index").is_file() or prefix.file(".meta").is_file():
        return prefix
    return None


def checkpoint_prefixes(folder: Path) -> list[CheckpointPrefix]:
    """Every checkpoint prefix in `folder` (a name with an .index or a .meta file, the empty name of
    `saver.save(session, "folder/")` included), sorted by name."""
    names = {path.name[: -len(suffix)] for suffix in (".index", ".meta") for path in folder.glob(f"*{suffix}")
             if path.name.endswith(suffix)}
    return [CheckpointPrefix(folder, name) for name in sorted(names)]


def _prefix_in_folder(folder: Path) -> CheckpointPrefix | None:
    """The checkpoint a folder holds: the one its `checkpoint` file names, in this folder (the file may name the
    absolute path of another machine) or where it says; otherwise the folder's only checkpoint.
    Several checkpoints and no `checkpoint` file naming one of them are refused: guessing could freeze the
    wrong step."""
    import tensorflow as tf

    refuse_special(folder / "checkpoint", "the folder's 'checkpoint' text file")
    try:
        state = tf.train.get_checkpoint_state(str(folder))
    except Exception:  # a garbled `checkpoint` text file: fall back to the files themselves
        state = None
    text = state.model_checkpoint_path if state is not None and state.model_checkpoint_path else None
    named = CheckpointPrefix.from_text(text) if text is not None else None
    if named is not None:
        # This folder's own copy first, though the file names a path elsewhere; a prefix ending in '/' names
        # the files of its own folder, so here it is this folder's empty-named prefix.
        here = CheckpointPrefix(folder, named.name)
        if here.file(".index").is_file() or here.file(".meta").is_file():
            return here
        elsewhere = named if named.folder.is_absolute() else CheckpointPrefix(folder / named.folder, named.name)
        if elsewhere.file(".index").is_file():
            return elsewhere
    prefixes = checkpoint_prefixes(folder)
    if len(prefixes) > 1:
        why = f"its 'checkpoint' file names {named.name}, which is not here" if named is not None else \
            "no 'checkpoint' file names one of them"
        raise SourceError(f"{folder}: holds {len(prefixes)} checkpoints ({', '.join(map(_shown, prefixes))}) "
                          f"and {why}", hint=f"give the prefix of the one to use, e.g. {prefixes[-1]}")
    return prefixes[0] if prefixes else None


def drop_output_shapes(graph_def: GraphDef) -> None:
    """Removes `_output_shapes`: older TensorFlow wrote shapes that newer importers may reject; they are only
    hints, recomputed on import."""
    for node in graph_def.node:
        if "_output_shapes" in node.attr:
            del node.attr["_output_shapes"]
    for function in graph_def.library.function:
        for node in function.node_def:
            if "_output_shapes" in node.attr:
                del node.attr["_output_shapes"]


def _shown(prefix: CheckpointPrefix) -> str:
    """A prefix's name for a list of a folder's checkpoints: ``model.ckpt``, or ``.index/.meta`` for the empty one."""
    return prefix.name or ".index/.meta (prefix ending in '/')"


def check_checkpoint_index(prefix: CheckpointPrefix) -> dict[str, list[int]]:
    """The variables and shapes the checkpoint's .index lists; a corrupt or missing index is refused."""
    import tensorflow as tf

    index = prefix.file(".index")
    refuse_special(index, "a checkpoint index")
    if not index.is_file():
        raise SourceError(f"{prefix}: checkpoint index {index.name} is missing",
                          hint="give the prefix the .index and .data-* files share (e.g. model.ckpt-1000)")
    try:
        # The reader itself, not tf.train.load_checkpoint: that takes `run_dir/` for a folder and follows its
        # `checkpoint` file, which may name another machine's path.
        reader = tf.compat.v1.train.NewCheckpointReader(str(prefix))
        return {name: list(shape) for name, shape in reader.get_variable_to_shape_map().items()}
    except (tf.errors.OpError, ValueError) as exc:
        raise SourceError(f"{index}: not a readable checkpoint index (corrupt or truncated)",
                          hint=first_line(exc)) from None


def _load_meta(meta: Path, prefix: CheckpointPrefix | None, kind: SourceKind, given: Path) -> LoadedSource:
    from tensorflow.core.protobuf import meta_graph_pb2

    meta_graph = parse_protobuf(meta_graph_pb2.MetaGraphDef(), meta, "meta graph")
    found = _inert(meta_graph, meta)
    drop_output_shapes(meta_graph.graph_def)
    return LoadedSource(path=given, kind=kind, graph_def=meta_graph.graph_def, meta_graph=meta_graph,
                        prefix=prefix, tf_version=meta_graph.meta_info_def.tensorflow_version, host_ops=found)


def _inert(meta_graph: Any, origin: object) -> tuple[HostOp, ...]:
    """A meta graph's graph checked and made inert in place (import_meta_graph imports the same message)."""
    return checked_graph(meta_graph.graph_def, origin, HostOpPolicy.INERT,
                         saver_def=meta_graph.saver_def if meta_graph.HasField("saver_def") else None)


def _load_checkpoint(prefix: CheckpointPrefix, given: Path, kind: SourceKind) -> LoadedSource:
    meta = prefix.file(".meta")
    if not meta.is_file():
        raise SourceError(f"{prefix}: checkpoint has no graph ({meta.name} is missing)",
                          hint="give the .meta written with the checkpoint, a frozen .pb or a SavedModel")
    if prefix.file(".index").is_file():
        check_checkpoint_index(prefix)
    return _load_meta(meta, prefix, kind, given)


def _load_pb(path: Path) -> LoadedSource:
    from tensorflow.core.framework import graph_pb2

    graph_def = parse_protobuf(graph_pb2.GraphDef(), path, "frozen GraphDef")
    found = checked_graph(graph_def, path, HostOpPolicy.INERT)
    drop_output_shapes(graph_def)
    return LoadedSource(path=path, kind="pb", graph_def=graph_def, host_ops=found)


def _serving_meta_graph(folder: Path) -> tuple[Any, tuple[HostOp, ...]]:
    """The SavedModel's serving meta graph, checked and made inert, with the ops of it that act on the host."""
    from tensorflow.core.protobuf import saved_model_pb2

    pb = folder / "saved_model.pb"
    refuse_special(pb, "a SavedModel (saved_model.pb)")
    if not pb.is_file():
        raise SourceError(f"{folder}: only binary SavedModels (saved_model.pb) are read, found saved_model.pbtxt")
    saved = parse_protobuf(saved_model_pb2.SavedModel(), pb, "SavedModel")
    if not saved.meta_graphs:
        raise SourceError(f"{pb}: the SavedModel holds no meta graph")
    serving = [m for m in saved.meta_graphs if "serve" in m.meta_info_def.tags]
    meta_graph = (serving or list(saved.meta_graphs))[0]
    return meta_graph, _inert(meta_graph, pb)


def serving_signature_name(names: Iterable[str]) -> str:
    """The signature a SavedModel is read through: serving_default, else the first by name, never TensorFlow's own
    (`__saved_model_init_op`); "" when there is none. Both loaders choose with this, whatever order they list in."""
    usable = sorted(name for name in names if not name.startswith("__"))
    if "serving_default" in usable:
        return "serving_default"
    return usable[0] if usable else ""


def _serving_signature(meta_graph: Any) -> tuple[str, tuple[SignatureTensor, ...]]:
    """The meta graph's serving signature (`serving_signature_name`) as key -> graph tensor entries."""
    name = serving_signature_name(meta_graph.signature_def)
    if not name:
        return "", ()
    signature = meta_graph.signature_def[name]
    entries = [SignatureTensor(key, info.name, "input") for key, info in sorted(signature.inputs.items())]
    entries += [SignatureTensor(key, info.name, "output") for key, info in sorted(signature.outputs.items())]
    return name, tuple(entries)


def _load_saved_model(folder: Path, allow_host_ops: bool) -> LoadedSource:
    meta_graph, found = _serving_meta_graph(folder)
    note = ""
    if len(meta_graph.object_graph_def.nodes) > 1 and meta_graph.signature_def:
        # Reviving runs the SavedModel's functions (its resources' initialisers): not while any of them acts.
        if acting(found) and not allow_host_ops:
            note = (f"not revived: its functions hold ops that act on the host, which reviving runs ({ALLOW_FLAG} "
                    "revives it); its serving signature's graph read through the TF1 loader instead")
        else:
            revived = _load_object_saved_model(folder, meta_graph)
            if not isinstance(revived, str):
                return replace(revived, host_ops=found)
            note = (f"TensorFlow cannot revive this SavedModel ({revived}); read its serving signature's graph "
                    "through the TF1 loader instead")
    drop_output_shapes(meta_graph.graph_def)
    prefix: CheckpointPrefix | None = CheckpointPrefix(folder / "variables", "variables")
    if prefix is not None and prefix.file(".index").is_file():
        check_checkpoint_index(prefix)
    else:
        prefix = None
    signature_name, signature = _serving_signature(meta_graph)
    return LoadedSource(path=folder, kind="saved_model", graph_def=meta_graph.graph_def, meta_graph=meta_graph,
                        prefix=prefix, tf_version=meta_graph.meta_info_def.tensorflow_version,
                        signature=signature, signature_name=signature_name,
                        other_signatures=_other_signatures(meta_graph, signature_name), note=note, host_ops=found)


def _other_signatures(meta_graph: Any, read: str) -> tuple[str, ...]:
    """The signatures besides the one read, TF's own (`__saved_model_init_op`) left out."""
    return tuple(sorted(name for name in meta_graph.signature_def if name != read and not name.startswith("__")))


def _constant_graph(function: Any) -> Any:
    """A concrete function's graph with its variables folded to constants and its inner function calls
    inlined (TF's own v2 conversion runs the inliner), so no call op is left for older consumers."""
    from tensorflow.python.framework.convert_to_constants import (  # the public API has no graph-level freeze
        convert_variables_to_constants_v2,
    )

    graph_def = convert_variables_to_constants_v2(function).graph.as_graph_def()
    drop_output_shapes(graph_def)
    return graph_def


def _load_object_saved_model(folder: Path, meta_graph: Any) -> LoadedSource | str:
    """A TF2 SavedModel (tf.saved_model.save): its serving signature, frozen as a function. Its graph names are
    the signature's: inputs as the signature's argument names, outputs ``Identity``, ``Identity_1``, ...
    Returns why not when TensorFlow cannot revive its objects (a Keras 2 model without tf_keras): the TF1
    loader reads the same signature from the meta graph and its variables instead."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (  # the public API has no graph-level freeze
        convert_variables_to_constants_v2,
    )

    try:
        loaded = tf.saved_model.load(str(folder))
    except Exception as exc:  # TF raises many kinds for objects it cannot revive or a broken SavedModel
        return f"{type(exc).__name__}: {first_line(exc)}"
    signature_name = serving_signature_name(loaded.signatures.keys())
    if not signature_name:
        return "TensorFlow revives no signature from it"
    function = loaded.signatures[signature_name]
    frozen = convert_variables_to_constants_v2(function)
    graph_def = frozen.graph.as_graph_def()
    drop_output_shapes(graph_def)
    inputs = [SignatureTensor(key, f"{key}:0", "input") for key in sorted(function.structured_input_signature[1])]
    # A signature returns a flat dict, flattened in sorted-key order (tf.nest's) into the function's outputs.
    structure = function.structured_outputs
    keys = sorted(structure) if isinstance(structure, dict) else []
    outputs = [SignatureTensor(key, tensor.name, "output")
               for key, tensor in zip(keys, frozen.outputs, strict=False)] if len(keys) == len(frozen.outputs) else []
    outputs = _outputs_named_by_key(graph_def, outputs, {item.key for item in inputs})
    return LoadedSource(path=folder, kind="saved_model", graph_def=graph_def,
                        tf_version=meta_graph.meta_info_def.tensorflow_version,
                        signature=(*inputs, *outputs), signature_name=signature_name,
                        other_signatures=_other_signatures(meta_graph, signature_name))


def _outputs_named_by_key(graph_def: GraphDef, outputs: list[SignatureTensor], taken_keys: set[str]
                           ) -> list[SignatureTensor]:
    """A revived signature's outputs are `Identity`, `Identity_1`, ...: each takes its key's name (a tf_keras
    model's output layer, `probs`; a tf.Module's dict key) where the key is the user's (not `output_0`) and free."""
    taken = {node.name for node in graph_def.node} | taken_keys
    named = []
    for item in outputs:
        old = node_name(item.tensor)
        if item.tensor == f"{old}:0" and not _GENERIC_KEY.match(item.key) and item.key not in taken:
            rename_node(graph_def, old, item.key)
            taken.add(item.key)
            item = SignatureTensor(item.key, f"{item.key}:0", item.role)
        named.append(item)
    return named


def _keras_version(path: Path) -> str:
    try:
        if path.suffix == ".keras":
            with zipfile.ZipFile(path) as archive:
                metadata = json.loads(archive.read("metadata.json"))
                return "keras " + str(metadata.get("keras_version", "?") if isinstance(metadata, dict) else "?")
        import h5py  # type: ignore[import-untyped]  # no stubs; Keras needs it for .h5, so it is there

        with h5py.File(path, "r") as handle:
            version = handle.attrs.get("keras_version", "")
        return f"keras {version.decode() if isinstance(version, bytes) else version}" if version else ""
    except (OSError, KeyError, ValueError, RecursionError, ImportError, zipfile.BadZipFile):
        return ""  # the version is shown for information: a file that does not say it is read all the same


_KERAS_CONFIG_LIMIT = 64 * 2**20  # bytes of a Keras file's model config: a large model's is a few hundred kB


def _keras_config(path: Path) -> Any:
    """The model config a Keras file holds (config.json of a .keras, the model_config attribute of an .h5), read
    without building anything; None where it has none infer can read."""
    text: str | bytes | None
    try:
        if path.suffix == ".keras":
            with zipfile.ZipFile(path) as archive:
                info = archive.getinfo("config.json")
                if info.file_size > _KERAS_CONFIG_LIMIT:
                    raise SourceError(f"{path}: its config.json is {info.file_size} bytes, more than a model's "
                                      f"config holds ({_KERAS_CONFIG_LIMIT})")
                text = archive.read(info)
        else:
            import h5py

            with h5py.File(path, "r") as handle:
                text = handle.attrs.get("model_config")
        if not text:
            return None
        return parse_json(text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text),
                          named=str(path), what="a Keras model config")
    except (InferError, OSError, KeyError, ValueError, ImportError, zipfile.BadZipFile):
        return None  # Keras says what is wrong with it when it loads it


def _lambda_layers(config: Any) -> list[str]:
    """The names of the Lambda layers (Python code, run when the model is built) anywhere in a Keras config,
    nested models included; walked without recursion."""
    found: list[str] = []
    pending = [config]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if item.get("class_name") == "Lambda":
                inner = item.get("config")
                found.append(str(inner.get("name", "?")) if isinstance(inner, dict) else "?")
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return sorted(found)


def _load_keras(path: Path, allow_host_ops: bool) -> LoadedSource:
    """A Keras model as a graph: its call traced into a concrete function, variables folded to constants. Loaded
    in Keras's safe mode: a Lambda layer (Python code, run while the model is built) is refused by name unless the
    user allows it, which turns safe mode off."""
    if path.suffix == ".keras" and not zipfile.is_zipfile(path):  # Keras itself would call it "not found"
        raise SourceError(f"{path}: not a Keras .keras file (not a zip archive)")
    lambdas = _lambda_layers(_keras_config(path))
    if lambdas and not allow_host_ops:
        shown = ", ".join(excerpt(name) for name in lambdas[:3]) + (f" and {len(lambdas) - 3} more"
                                                                     if len(lambdas) > 3 else "")
        raise SourceError(f"{path}: Lambda layer {shown} is Python code that would run while Keras builds the model; "
                          "infer loads Keras files in safe mode, which runs none",
                          hint=f"if you trust this model's author, pass {ALLOW_FLAG} (freeze), which loads it with "
                               "safe mode off; or rebuild the model without Lambda layers")
    import keras
    import tensorflow as tf

    try:
        model = keras.models.load_model(str(path), compile=False, safe_mode=not allow_host_ops)
    except Exception as exc:  # Keras raises anything from OSError to ValueError for a bad file
        raise SourceError(f"{path}: Keras cannot load this file", hint=excerpt(first_line(exc), 300)) from None
    specs = [tf.TensorSpec(tensor.shape, tensor.dtype, name=tensor.name.split(":")[0]) for tensor in model.inputs]

    def call(*args: Any) -> Any:
        return model(list(args) if len(args) > 1 else args[0], training=False)

    function = tf.function(call).get_concrete_function(*specs)
    graph_def = _constant_graph(function)
    _name_outputs_after_layers(graph_def, function, [str(name) for name in getattr(model, "output_names", [])])
    found = checked_graph(graph_def, path, HostOpPolicy.INERT)
    return LoadedSource(path=path, kind="keras", graph_def=graph_def, tf_version=_keras_version(path), host_ops=found)


def _name_outputs_after_layers(graph_def: GraphDef, function: Any, layer_names: list[str]) -> None:
    """The traced outputs are Identity nodes named ``Identity``, ``Identity_1``...; they take the names of the
    Keras output layers (``probs``) where those are free, so the user sees the names they gave."""
    taken = {node.name for node in graph_def.node}
    outputs = [node_name(tensor.name) for tensor in function.outputs]
    if len(outputs) != len(layer_names):
        return
    for old, new in zip(outputs, layer_names, strict=True):
        if new and new not in taken and old in taken:
            rename_node(graph_def, old, new)
            taken.add(new)


def load_source(path: Path | str, *, allow_host_ops: bool = False) -> LoadedSource:
    """Loads whatever `path` names, or says what it looked for. Loading runs none of the model's code: a SavedModel
    whose functions act on the host is not revived (its graph is read as TF1 reads it), a Keras Lambda layer is
    refused, and the graph is inert (`LoadedSource.host_ops`); `allow_host_ops` revives and loads them as they are.
    Whether a graph may then run is the caller's to check (`ckpt2pb.host_ops.find_host_ops` over what it runs)."""
    path = Path(path)
    refuse_special(path, "a model source (checkpoint, .meta, .pb, SavedModel or Keras file)")
    if path.is_dir():
        for name in _SAVED_MODEL_FILES:
            refuse_special(path / name, f"a SavedModel ({name})")
        if any((path / name).is_file() for name in _SAVED_MODEL_FILES):
            return _load_saved_model(path, allow_host_ops)
        prefix = _prefix_in_folder(path)
        if prefix is None:
            inside = sorted(str(sub) for sub in path.iterdir() if sub.is_dir() and (
                any((sub / name).is_file() for name in _SAVED_MODEL_FILES) or checkpoint_prefixes(sub)))
            raise SourceError(f"{path}: no checkpoint, SavedModel or model file in this folder",
                              hint=f"one level down: {', '.join(inside)}" if inside else
                              "give a checkpoint prefix, a .meta, a .pb, a SavedModel folder or a Keras file")
        return _load_checkpoint(prefix, path, "checkpoint")
    if path.is_file() and path.name in _SAVED_MODEL_FILES:
        return _load_saved_model(path.parent, allow_host_ops)
    if path.is_file() and path.suffix in (".h5", ".hdf5", ".keras"):
        return _load_keras(path, allow_host_ops)
    if path.is_file() and path.suffix == ".pb":
        return _load_pb(path)
    if path.is_file() and path.name.endswith(".meta"):  # `.meta` itself has no suffix to pathlib
        return _load_meta(path, CheckpointPrefix(path.parent, path.name[: -len(".meta")]), "meta", path)
    prefix = _checkpoint_prefix_for(str(path))
    if prefix is not None:
        return _load_checkpoint(prefix, path, "checkpoint")
    if path.is_symlink() and not path.exists():
        raise SourceError(f"{path}: a symbolic link that leads nowhere (a loop, or its target is missing)")
    if path.exists():
        raise SourceError(f"{path}: not a model source this reads",
                          hint="give a checkpoint prefix, a .meta, a .pb, a SavedModel folder or a Keras file")
    nearby = _sources_in(path.parent) if path.parent.is_dir() else []
    raise SourceError(f"{path}: no such checkpoint or model file (looked for {path.name}, {path.name}.index, "
                      f"{path.name}.meta)",
                      hint=f"{path.parent} holds {', '.join(nearby)}" if nearby else None)


def _sources_in(folder: Path) -> list[str]:
    """The names in `folder` a user could mean: checkpoint prefixes, SavedModel folders, .pb and Keras files."""
    saved_models = [sub.name + "/" for sub in folder.iterdir()
                    if sub.is_dir() and any((sub / name).is_file() for name in _SAVED_MODEL_FILES)]
    files = [f.name for f in folder.iterdir() if f.is_file() and f.suffix in (".pb", ".h5", ".hdf5", ".keras")]
    return [_shown(p) for p in checkpoint_prefixes(folder)] + sorted(saved_models) + sorted(files)


@contextmanager
def restored_session(source: LoadedSource) -> Iterator[tuple[Any, Any]]:
    """The source's graph in a session, its variables restored from the checkpoint: the reference to verify
    against. Yields (graph, session)."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default(), tf1.Session(graph=graph, config=session_config()) as session:
        if source.meta_graph is None:
            tf1.import_graph_def(source.graph_def, name="")
        else:
            saver = tf1.train.import_meta_graph(source.meta_graph, clear_devices=True)
            if source.has_variables:
                if saver is None or source.prefix is None:
                    raise SourceError(f"{source.path}: the graph has variables but no checkpoint holds their values",
                                      hint="its variables/ folder (variables.index, variables.data-*) is missing"
                                      if source.kind == "saved_model" else "the graph has no saver to restore them")
                check_variable_shapes(source.graph_def, check_checkpoint_index(source.prefix), source.prefix)
                restore(saver, session, source.prefix)
        yield graph, session


def check_variable_shapes(graph_def: Any, stored: dict[str, list[int]], prefix: CheckpointPrefix) -> None:
    """Refuses a checkpoint holding a variable of another shape than the graph declares under the same name: a
    resource variable takes whatever shape it is assigned, so the model would be frozen (and verified) as another
    model than the graph describes (a 5-class head for a 3-class graph)."""
    for node in graph_def.node:
        if node.op not in VARIABLE_OPS or "shape" not in node.attr or node.name not in stored:
            continue
        declared = node.attr["shape"].shape
        if declared.unknown_rank:
            continue
        dims = [dim.size for dim in declared.dim]
        held = list(stored[node.name])
        if len(dims) != len(held) or any(d >= 0 and d != h for d, h in zip(dims, held, strict=False)):
            shown = ",".join("?" if d < 0 else str(d) for d in dims)
            raise SourceError(f"{prefix}: variable {excerpt(node.name)} is ({shown}) in the graph, "
                              f"({','.join(map(str, held))}) in the checkpoint",
                              hint="the checkpoint was saved from another version of the model: give the .meta "
                                   "written with it")


def restore(saver: Any, session: Any, prefix: CheckpointPrefix) -> None:
    """Restores every variable; a corrupt or truncated .data file is named, TensorFlow's words go in the hint."""
    import tensorflow as tf

    check_checkpoint_index(prefix)
    _check_data_files(prefix)
    try:
        saver.restore(session, str(prefix))
    except tf.errors.OpError as exc:
        raise SourceError(f"{prefix}: checkpoint data (.data-*) is corrupt or truncated",
                          hint=tensorflow_reason(exc.message) or type(exc).__name__) from None
    except ValueError as exc:  # the graph names a variable the checkpoint lacks, or a shape differs
        raise SourceError(f"{prefix}: checkpoint does not match the graph", hint=first_line(exc)) from None


def _check_data_files(prefix: CheckpointPrefix) -> None:
    """Refuses a checkpoint whose .data-* shards are not all there (TensorFlow would call it corrupt)."""
    import glob

    shards = sorted(p for p in prefix.folder.glob(f"{glob.escape(prefix.name)}.data-*") if _DATA_SUFFIX.search(p.name))
    for shard in shards:
        refuse_special(shard, "checkpoint data")
    if not shards:
        raise SourceError(f"{prefix}: checkpoint data is missing (no {prefix.name}.data-*-of-* beside its .index)",
                          hint="copy the .data-* files saved with the .index")
    total = int(str(shards[0]).rsplit("-of-", 1)[1])
    missing = [name for name in (f"{prefix.name}.data-{i:05d}-of-{total:05d}" for i in range(total))
               if not (prefix.folder / name).is_file()]
    if missing:
        raise SourceError(f"{prefix}: checkpoint data is missing {', '.join(missing)}",
                          hint="copy the .data-* files saved with the .index")
