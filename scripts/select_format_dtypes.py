"""The float dtypes a dynamic-format AI Core kernel offers on one chip, read off its `op_select_format` in CANN's
operator snapshot (`ops/built-in/tbe/impl/<op>.py`): used by scripts/build_op_tables.py, which writes the result as
data (pairs of input 0 and output 0 dtypes, with the implementation's path); nothing of the code is kept.

`op_select_format` builds, per input and output, a comma-separated list of dtypes (`gen_param(classify="input0",
datatype="float16,float,...")`); the lists are columns: column k of input0's goes with column k of output0's. The
function is evaluated here abstractly, as Python source, without running it: string and list values are followed
through assignments, joins, concatenation, loops over known lists and the calls of functions of the snapshot's own
`impl` modules; everything else (shapes, formats, attributes: the op's arguments) is unknown. An `if` on something
unknown takes both ways. The chip is known by what the code asks of it:

- `get_soc_spec("SHORT_SOC_VERSION")`: the family's own name (Ascend310, Ascend310P, Ascend310B, Ascend910,
  Ascend910B), as the snapshot's platform constants spell it;
- `intrinsic_check_support("Intrinsic_fix_pipe_unit_list")` (the fixpipe unit, `util_conv2d.is_support_fixpipe`):
  True on Ascend910B and Ascend310B only (`INTRINSICS`), which is what the snapshot's own tests pair it with;
- anything else asked of the chip (`api_check_support("tik.vgatherb")`, other soc specs): unknown, and both ways are
  taken, but they must agree: where the two ways give different dtypes, the op is unknown on that chip.

Ways that differ only by shapes or formats are united: the kernel offers the dtypes of any of them. An op is
**decided** on a chip when every way returns `get_dynamic_param_in_json` of params whose input0 and output0 lists are
known and of one length; its pairs are then the columns where both are floats. Anything else (a way that returns
something unknown, lists of unknown dtypes, a loop over an unknown list, more ways than `_MAX_WAYS`) leaves the op
unknown: its dtypes are not claimed.
"""

from __future__ import annotations

import ast
import copy
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

SOC_VERSIONS: Mapping[str, str] = {"ascend310": "Ascend310", "ascend310b": "Ascend310B", "ascend310p": "Ascend310P",
                                   "ascend910": "Ascend910", "ascend910b": "Ascend910B"}
# Intrinsics the chips have, where op_select_format asks: only the fixpipe unit is needed by the ops read. The
# snapshot's tests mock "Intrinsic_fix_pipe_unit_list" True together with SHORT_SOC_VERSION Ascend910B2 or
# Ascend310B1 (ops/built-in/tests/st/FixPipe/test_fixpipe_custom.py, tests/ut/ops_test/Conv2D/
# test_conv2d_fixpipe_err_impl.py), and CANN names those two the DaVinci V220 and V300 cores.
INTRINSICS: Mapping[str, frozenset[str]] = {"Intrinsic_fix_pipe_unit_list": frozenset({"ascend910b", "ascend310b"})}
FLOATS: Mapping[str, str] = {"float16": "float16", "float": "float32", "float32": "float32", "bfloat16": "bfloat16",
                             "double": "float64", "float64": "float64"}
_MAX_WAYS = 4096
_MAX_DEPTH = 12
_MAX_UNROLL = 256


class _Unknown:
    """A value this reading cannot know; `chip`: it depends on what the chip has."""

    __slots__ = ("chip",)

    def __init__(self, chip: bool = False) -> None:
        self.chip = chip

    def __repr__(self) -> str:
        return "<chip?>" if self.chip else "<?>"


DATA = _Unknown()
CHIP = _Unknown(chip=True)


@dataclass(frozen=True)
class Param:
    """One `gen_param(...)`: its classify (input0, output0, ...) and its dtype list (None: not known)."""

    classify: str
    dtypes: tuple[str, ...] | None


@dataclass(frozen=True)
class Params:
    """What `get_dynamic_param_in_json` is given: the params, in order."""

    items: tuple[Any, ...]


class _Dead(Exception):
    """This way fails in Python itself (a local read before it is bound): it selects no format."""


class GiveUp(Exception):
    """Something this reading does not follow: the op is unknown on the chip."""


@dataclass
class _Way:
    """One way through the code: the names bound, the answers taken to questions about the chip."""

    env: dict[str, Any]
    chip: dict[tuple[str, int, int], bool] = field(default_factory=dict)
    returned: Any = None
    done: bool = False

    def fork(self) -> _Way:
        return _Way(copy.deepcopy(self.env), dict(self.chip), self.returned, self.done)


@dataclass
class _Module:
    name: str
    tree: ast.Module
    functions: dict[str, ast.FunctionDef]
    imports: dict[str, str]  # local name -> dotted "module" or "module:attr"
    constants: dict[str, Any]


def _is_unknown(value: Any) -> bool:
    return isinstance(value, _Unknown)


def _unknown_of(*values: Any) -> _Unknown:
    return CHIP if any(isinstance(v, _Unknown) and v.chip for v in values) else DATA


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


class Reader:
    """Abstract evaluation of `op_select_format` on one chip family; `source(module)` gives an impl module's text
    (``impl.util.util_conv2d``), or None where the snapshot has none."""

    def __init__(self, family: str, source: Callable[[str], str | None]) -> None:
        self.family = family
        self.soc = SOC_VERSIONS[family]
        self.source = source
        self.modules: dict[str, _Module | None] = {}
        self.ways = 0
        self.read: set[str] = set()  # the modules whose code was followed

    # -- modules --

    def module(self, name: str) -> _Module | None:
        if name not in self.modules:
            text = self.source(name)
            try:
                self.modules[name] = None if text is None else self._parse(name, text)
            except SyntaxError:
                self.modules[name] = None
        return self.modules[name]

    def _parse(self, name: str, text: str) -> _Module:
        tree = ast.parse(text)
        functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        imports: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    imports[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                base = node.module if node.level == 0 else ".".join([*name.split(".")[:-node.level], node.module])
                for alias in node.names:
                    imports[alias.asname or alias.name] = f"{base}:{alias.name}"
        module = _Module(name, tree, functions, imports, {})
        way = _Way({})
        for node in tree.body:  # module-level constants: literal assignments only
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    value = self._eval_one(node.value, way, module)
                except GiveUp:
                    continue
                if not _is_unknown(value):
                    module.constants[node.targets[0].id] = value
        return module

    # -- entry --

    def select_format(self, module_name: str) -> list[_Way]:
        module = self.module(module_name)
        if module is None or "op_select_format" not in module.functions:
            raise GiveUp(f"{module_name}: no op_select_format")
        function = module.functions["op_select_format"]
        args = {arg.arg: DATA for arg in (*function.args.args, *function.args.kwonlyargs)}
        ends = []
        for way, value in self._call(module, function, args, _Way({}), 0):
            way.returned, way.done = value, True
            ends.append(way)
        return ends

    # -- calls --

    def _call(self, module: _Module, function: ast.FunctionDef, args: dict[str, Any], caller: _Way,
              depth: int) -> list[tuple[_Way, Any]]:
        if depth > _MAX_DEPTH:
            raise GiveUp(f"calls nested past {_MAX_DEPTH}")
        self.read.add(module.name)
        defaults = function.args.defaults
        positional = function.args.args
        env: dict[str, Any] = {}
        for arg, default in zip(positional[len(positional) - len(defaults):], defaults, strict=True):
            env[arg.arg] = self._eval_one(default, _Way({}), module)
        for arg, keyword_default in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True):
            if keyword_default is not None:
                env[arg.arg] = self._eval_one(keyword_default, _Way({}), module)
        env.update(args)
        for arg in (*positional, *function.args.kwonlyargs):
            env.setdefault(arg.arg, DATA)
        env[_LOCALS] = frozenset(node.id for node in ast.walk(function)
                                 if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))
        way = _Way(env, dict(caller.chip))
        found = []
        for end in self._block(function.body, [way], module, depth):
            result = caller.fork()
            result.chip = end.chip
            found.append((result, end.returned if end.done else None))
        return found

    def _call_value(self, node: ast.Call, way: _Way, module: _Module, depth: int) -> list[tuple[_Way, Any]]:
        name = _dotted(node.func)
        last = node.func.attr if isinstance(node.func, ast.Attribute) else name
        if isinstance(node.func, ast.Attribute) and last in ("append", "extend", "insert", "get", "join", "split",
                                                               "upper", "lower", "index", "count", "copy",
                                                               "replace", "strip", "items", "keys", "values"):
            return [(way, self._method(node, way, module, depth))]
        arguments = [self._eval_one(arg, way, module, depth) for arg in node.args]
        keywords = {kw.arg: self._eval_one(kw.value, way, module, depth) for kw in node.keywords if kw.arg}
        if last == "gen_param":
            classify = keywords.get("classify", arguments[0] if arguments else DATA)
            datatype = keywords.get("datatype", arguments[2] if len(arguments) > 2 else DATA)
            if not isinstance(classify, str):
                raise GiveUp("gen_param with an unknown classify")
            dtypes = tuple(p.strip() for p in datatype.split(",")) if isinstance(datatype, str) else None
            return [(way, Param(classify, dtypes))]
        if last == "get_dynamic_param_in_json":
            items = arguments[0] if arguments else DATA
            return [(way, Params(tuple(items)) if isinstance(items, list | tuple) else DATA)]
        if last == "get_soc_spec":
            key = arguments[0] if arguments else DATA
            return [(way, self.soc if key == "SHORT_SOC_VERSION" else CHIP)]
        if last == "intrinsic_check_support":
            key = arguments[0] if arguments else DATA
            if isinstance(key, str) and key in INTRINSICS and len(arguments) == 1:
                return [(way, self.family in INTRINSICS[key])]
            return [(way, CHIP)]
        if last in ("api_check_support", "is_lhisi_version", "is_support_a100", "is_unknown_rank_input",
                    "get_context"):
            return [(way, CHIP if last != "is_unknown_rank_input" and last != "get_context" else DATA)]
        builtin = self._builtin(last, name, arguments)
        if builtin is not _NOT_BUILTIN:
            return [(way, builtin)]
        target = self._resolve(name, module)
        if target is None:
            return [(way, DATA)]
        callee_module, function = target
        params = [a.arg for a in function.args.args]
        bound = dict(zip(params, arguments, strict=False))
        bound.update({k: v for k, v in keywords.items() if k in params or
                      k in [a.arg for a in function.args.kwonlyargs]})
        try:
            return self._call(callee_module, function, bound, way, depth + 1)
        except GiveUp:
            # A helper this reading cannot follow gives an unknown value; what it may have changed of the lists
            # and dicts handed to it is unknown too.
            for arg in (*node.args, *(kw.value for kw in node.keywords)):
                if isinstance(arg, ast.Name) and isinstance(way.env.get(arg.id), list | dict):
                    way.env[arg.id] = DATA
            return [(way, DATA)]

    def _resolve(self, name: str, module: _Module) -> tuple[_Module, ast.FunctionDef] | None:
        """A called name to a function of the snapshot's impl modules."""
        if not name:
            return None
        if "." not in name:
            if name in module.functions:
                return module, module.functions[name]
            imported = module.imports.get(name, "")
            if ":" in imported:
                source, attr = imported.split(":", 1)
                target = self._impl_module(source)
                if target is not None and attr in target.functions:
                    return target, target.functions[attr]
            return None
        head, attr = name.rsplit(".", 1)
        imported = module.imports.get(head, "")
        dotted = imported.replace(":", ".") if imported else ""
        target = self._impl_module(dotted)
        if target is not None and attr in target.functions:
            return target, target.functions[attr]
        return None

    def _impl_module(self, dotted: str) -> _Module | None:
        return self.module(dotted) if dotted.startswith("impl.") or dotted == "impl" else None

    def _method(self, node: ast.Call, way: _Way, module: _Module, depth: int) -> Any:
        assert isinstance(node.func, ast.Attribute)
        method = node.func.attr
        owner = self._eval_one(node.func.value, way, module, depth)
        arguments = [self._eval_one(arg, way, module, depth) for arg in node.args]
        if method in ("append", "extend", "insert"):
            if not isinstance(owner, list):
                if isinstance(node.func.value, ast.Name):
                    way.env[node.func.value.id] = _unknown_of(owner, *arguments)
                return None
            if method == "append" and len(arguments) == 1:
                owner.append(arguments[0])
            elif method == "extend" and len(arguments) == 1 and isinstance(arguments[0], list | tuple):
                owner.extend(arguments[0])
            elif method == "insert" and len(arguments) == 2 and isinstance(arguments[0], int):
                owner.insert(arguments[0], arguments[1])
            else:
                if isinstance(node.func.value, ast.Name):
                    way.env[node.func.value.id] = _unknown_of(*arguments)
            return None
        if _is_unknown(owner) or any(_is_unknown(a) for a in arguments):
            return _unknown_of(owner, *arguments)
        try:
            if method == "join" and isinstance(owner, str) and isinstance(arguments[0], list | tuple) and \
                    all(isinstance(item, str) for item in arguments[0]):
                return owner.join(arguments[0])
            if method == "get" and isinstance(owner, dict):
                return owner.get(*arguments) if arguments[0] in owner or len(arguments) > 1 else DATA
            if method in ("split", "upper", "lower", "replace", "strip") and isinstance(owner, str):
                return getattr(owner, method)(*arguments)
            if method == "copy" and isinstance(owner, list | dict):
                return copy.deepcopy(owner)
        except (TypeError, ValueError, AttributeError, IndexError):
            return DATA
        return DATA

    def _builtin(self, last: str, name: str, arguments: list[Any]) -> Any:
        if name not in ("len", "list", "tuple", "str", "int", "sorted", "range", "zip", "enumerate", "set", "max",
                        "min", "any", "all", "dict"):
            return _NOT_BUILTIN
        if any(_is_unknown(a) for a in arguments):
            return _unknown_of(*arguments)
        try:
            if name == "range":
                return list(range(*arguments))
            if name in ("zip", "enumerate"):
                return [list(item) for item in (zip(*arguments, strict=False) if name == "zip"
                                                else enumerate(*arguments))]
            if any(isinstance(a, list | tuple) and any(_is_unknown(i) for i in a) for a in arguments) and \
                    name not in ("len", "list", "tuple"):
                return DATA
            builtins: dict[str, Callable[..., Any]] = {
                "len": len, "list": list, "tuple": tuple, "str": str, "int": int, "sorted": sorted, "set": set,
                "max": max, "min": min, "any": any, "all": all, "dict": dict}
            function = builtins[name]
            value = function(*arguments)
            return list(value) if isinstance(value, tuple | set) else value
        except (TypeError, ValueError):
            return DATA

    # -- expressions --

    def _eval_one(self, node: ast.expr, way: _Way, module: _Module, depth: int = 0) -> Any:
        """An expression whose evaluation does not fork (a call that forks is refused here)."""
        results = self._eval(node, way, module, depth)
        if len(results) == 1:
            found_way, value = results[0]
            way.chip.update(found_way.chip)
            return value
        # a call inside an expression took several ways: one value where they agree, else unknown (and what the
        # ways asked of the chip is not kept: the ways are not followed apart here)
        values = [value for _, value in results]
        if all(not _is_unknown(v) for v in values) and all(v == values[0] for v in values[1:]):
            return values[0]
        asked = any(found.chip != way.chip for found, _ in results)
        return CHIP if asked or any(isinstance(v, _Unknown) and v.chip for v in values) else DATA

    def _eval(self, node: ast.expr, way: _Way, module: _Module, depth: int) -> list[tuple[_Way, Any]]:
        if isinstance(node, ast.Call):
            return self._call_value(node, way, module, depth)
        return [(way, self._plain(node, way, module, depth))]

    def _plain(self, node: ast.expr, way: _Way, module: _Module, depth: int) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in way.env:
                return way.env[node.id]
            if node.id in way.env.get(_LOCALS, ()):
                raise _Dead(node.id)  # UnboundLocalError on this way
            if node.id in module.constants:
                return copy.deepcopy(module.constants[node.id])
            return {"True": True, "False": False, "None": None}.get(node.id, DATA)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return [self._eval_one(item, way, module, depth) for item in node.elts]
        if isinstance(node, ast.Dict):
            keys = [self._eval_one(k, way, module, depth) if k is not None else DATA for k in node.keys]
            values = [self._eval_one(v, way, module, depth) for v in node.values]
            if any(_is_unknown(k) or isinstance(k, list) for k in keys):
                return DATA
            return dict(zip(keys, values, strict=True))
        if isinstance(node, ast.JoinedStr):
            parts = []
            for piece in node.values:
                part = self._eval_one(piece.value, way, module, depth) if isinstance(piece, ast.FormattedValue) \
                    else self._eval_one(piece, way, module, depth)
                if _is_unknown(part):
                    return part
                parts.append(str(part))
            return "".join(parts)
        if isinstance(node, ast.BinOp):
            left = self._eval_one(node.left, way, module, depth)
            right = self._eval_one(node.right, way, module, depth)
            if _is_unknown(left) or _is_unknown(right):
                return _unknown_of(left, right)
            try:
                if isinstance(node.op, ast.Add):
                    if isinstance(left, list) and isinstance(right, list):
                        return left + right
                    return left + right if isinstance(left, str) and isinstance(right, str) else DATA
                if isinstance(node.op, ast.Mult):
                    if isinstance(left, list | str) and isinstance(right, int):
                        return left * right
                    if isinstance(right, list | str) and isinstance(left, int):
                        return right * left
            except TypeError:
                return DATA
            return DATA
        if isinstance(node, ast.BoolOp):  # Python's own: the first operand that decides, else the last
            value: Any = None
            for operand in node.values:
                value = self._eval_one(operand, way, module, depth)
                if _is_unknown(value):
                    return value
                if bool(value) == isinstance(node.op, ast.Or):
                    return value
            return value
        if isinstance(node, ast.UnaryOp):
            operand = self._eval_one(node.operand, way, module, depth)
            if _is_unknown(operand):
                return operand
            if isinstance(node.op, ast.Not):
                return not operand
            if isinstance(node.op, ast.USub) and isinstance(operand, int | float):
                return -operand
            return DATA
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self._eval_one(node.left, way, module, depth)
            right = self._eval_one(node.comparators[0], way, module, depth)
            if _is_unknown(left) or _is_unknown(right):
                return _unknown_of(left, right)
            op = node.ops[0]
            try:
                if isinstance(op, ast.In | ast.NotIn):
                    if isinstance(right, list) and any(_is_unknown(item) for item in right):
                        return _unknown_of(*right)
                    found = left in right
                    return found if isinstance(op, ast.In) else not found
                if isinstance(op, ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
                    same = left == right
                    return same if isinstance(op, ast.Eq | ast.Is) else not same
            except TypeError:
                return DATA
            return DATA
        if isinstance(node, ast.Subscript):
            owner = self._eval_one(node.value, way, module, depth)
            index = self._eval_one(node.slice, way, module, depth) if not isinstance(node.slice, ast.Slice) \
                else None
            if _is_unknown(owner) or _is_unknown(index):
                return _unknown_of(owner, index)
            try:
                if isinstance(node.slice, ast.Slice):
                    bounds = [self._eval_one(b, way, module, depth) if b is not None else None
                              for b in (node.slice.lower, node.slice.upper, node.slice.step)]
                    if any(_is_unknown(b) for b in bounds):
                        return DATA
                    return owner[slice(*bounds)]
                return owner[index]
            except (TypeError, KeyError, IndexError):
                return DATA
        if isinstance(node, ast.IfExp):
            test = self._eval_one(node.test, way, module, depth)
            if _is_unknown(test):
                body = self._eval_one(node.body, way, module, depth)
                other = self._eval_one(node.orelse, way, module, depth)
                return body if body == other else _unknown_of(test)
            return self._eval_one(node.body if test else node.orelse, way, module, depth)
        if isinstance(node, ast.ListComp | ast.GeneratorExp) and len(node.generators) == 1 and \
                not node.generators[0].ifs:
            generator = node.generators[0]
            items = self._eval_one(generator.iter, way, module, depth)
            if not isinstance(items, list | str) or not isinstance(generator.target, ast.Name):
                return DATA
            made: list[Any] = []
            for item in items:
                inner = way.fork()
                inner.env[generator.target.id] = item
                made.append(self._eval_one(node.elt, inner, module, depth))
            return made
        if isinstance(node, ast.Attribute):
            return DATA
        return DATA

    # -- statements --

    def _block(self, body: Iterable[ast.stmt], ways: list[_Way], module: _Module, depth: int) -> list[_Way]:
        for statement in body:
            running = [w for w in ways if not w.done]
            finished = [w for w in ways if w.done]
            ways = finished + [after for way in running for after in self._alive(statement, way, module, depth)]
            self.ways = max(self.ways, len(ways))
            if len(ways) > _MAX_WAYS:
                raise GiveUp(f"more than {_MAX_WAYS} ways through the code")
        return ways

    def _alive(self, node: ast.stmt, way: _Way, module: _Module, depth: int) -> list[_Way]:
        try:
            return self._statement(node, way, module, depth)
        except _Dead:
            return []

    def _statement(self, node: ast.stmt, way: _Way, module: _Module, depth: int) -> list[_Way]:
        if isinstance(node, ast.Return):
            if node.value is None:
                way.returned, way.done = None, True
                return [way]
            ends = []
            for after, value in self._eval(node.value, way, module, depth):
                after.returned, after.done = value, True
                ends.append(after)
            return ends
        if isinstance(node, ast.Assign):
            ends = []
            for after, value in self._eval(node.value, way, module, depth):
                for target in node.targets:
                    self._bind(target, value, after)
                ends.append(after)
            return ends
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            value = self._eval_one(node.value, way, module, depth)
            self._bind(node.target, value, way)
            return [way]
        if isinstance(node, ast.AugAssign) and not isinstance(node.target, ast.Name):
            self._bind(node.target, DATA, way)  # x[0] *= 16: the container is no longer followed
            return [way]
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            left = way.env.get(node.target.id, DATA)
            right = self._eval_one(node.value, way, module, depth)
            if isinstance(node.op, ast.Add) and isinstance(left, list) and isinstance(right, list):
                left.extend(right)
            elif isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
                way.env[node.target.id] = left + right
            else:
                way.env[node.target.id] = _unknown_of(left, right)
            return [way]
        if isinstance(node, ast.Expr):
            return [after for after, _ in self._eval(node.value, way, module, depth)]
        if isinstance(node, ast.If):
            test = self._eval_one(node.test, way, module, depth)
            if not _is_unknown(test):
                return self._block(node.body if test else node.orelse, [way], module, depth)
            if test.chip:
                site = (module.name, node.lineno, node.col_offset)
                if site in way.chip:
                    return self._block(node.body if way.chip[site] else node.orelse, [way], module, depth)
                taken, other = way, way.fork()
                taken.chip[site], other.chip[site] = True, False
                return self._block(node.body, [taken], module, depth) + \
                    self._block(node.orelse, [other], module, depth)
            return self._block(node.body, [way.fork()], module, depth) + self._block(node.orelse, [way], module,
                                                                                      depth)
        if isinstance(node, ast.For | ast.While):
            items = self._eval_one(node.iter, way, module, depth) if isinstance(node, ast.For) else DATA
            if isinstance(items, dict):
                items = list(items)
            jumps = any(isinstance(inner, ast.Break | ast.Continue) for inner in ast.walk(node))
            if not isinstance(items, list | str) or len(items) > _MAX_UNROLL or jumps:
                return [_havoc(node, way)]  # unknown length: whatever the loop writes becomes unknown
            assert isinstance(node, ast.For)
            ways = [way]
            for item in items:
                for running in ways:
                    if not running.done:
                        self._bind(node.target, item, running)
                ways = self._block(node.body, ways, module, depth)
            return self._block(node.orelse, ways, module, depth)
        if isinstance(node, ast.Try):  # the body, or any handler from where the body began
            handled = [self._block(handler.body, [way.fork()], module, depth) for handler in node.handlers]
            ways = self._block([*node.body, *node.orelse], [way], module, depth) + \
                [after for ends in handled for after in ends]
            return self._block(node.finalbody, ways, module, depth)
        if isinstance(node, ast.With):
            return self._block(node.body, [way], module, depth)
        if isinstance(node, ast.FunctionDef):
            module.functions.setdefault(node.name, node)  # a nested helper, called by name
            return [way]
        if isinstance(node, ast.Raise):
            return []  # this way ends in an error: it selects no format
        if isinstance(node, ast.Pass | ast.Assert | ast.Global | ast.Nonlocal | ast.Import | ast.ImportFrom |
                      ast.Delete):
            return [way]
        if isinstance(node, ast.ClassDef):
            return [way]
        raise GiveUp(f"a {type(node).__name__} statement (line {node.lineno})")

    def _bind(self, target: ast.expr, value: Any, way: _Way) -> None:
        if isinstance(target, ast.Name):
            way.env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, list | tuple) and len(value) == len(target.elts):
                for inner, item in zip(target.elts, value, strict=True):
                    self._bind(inner, item, way)
            else:
                for inner in target.elts:
                    self._bind(inner, _unknown_of(value) if _is_unknown(value) else DATA, way)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            owner = way.env.get(target.value.id)
            key = target.slice.value if isinstance(target.slice, ast.Constant) else None
            placed = isinstance(owner, dict) and isinstance(key, str | int)
            placed = placed or (isinstance(owner, list) and isinstance(key, int) and -len(owner) <= key < len(owner))
            if placed:
                owner[key] = value  # type: ignore[index]
            elif target.value.id in way.env:
                way.env[target.value.id] = DATA  # a store this reading cannot place: the container is unknown


def _havoc(loop: ast.For | ast.While, way: _Way) -> _Way:
    """A loop not followed: every name it binds or list it grows is unknown after it. One that returns or raises
    cannot be summed up so."""
    for inner in ast.walk(loop):
        if isinstance(inner, ast.Return | ast.Raise | ast.Yield):
            raise GiveUp(f"a loop this reading does not follow returns or raises (line {loop.lineno})")
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
            way.env[inner.id] = DATA
        elif isinstance(inner, ast.Subscript) and isinstance(inner.ctx, ast.Store) and \
                isinstance(inner.value, ast.Name):
            way.env[inner.value.id] = DATA
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and \
                isinstance(inner.func.value, ast.Name) and inner.func.attr in ("append", "extend", "insert",
                                                                              "update", "pop", "remove"):
            way.env[inner.func.value.id] = DATA
    return way


_NOT_BUILTIN = object()
_LOCALS = "\0locals"  # the env's entry of the names a function binds somewhere


def _columns(params: Params) -> set[tuple[str, str]] | None:
    """The float (input0, output0) pairs of one returned param list; None where it does not say them."""
    by_classify = {item.classify: item for item in params.items if isinstance(item, Param)}
    first, last = by_classify.get("input0"), by_classify.get("output0")
    if first is None or last is None or first.dtypes is None or last.dtypes is None or \
            len(first.dtypes) != len(last.dtypes):
        return None
    return {(FLOATS[a], FLOATS[b]) for a, b in zip(first.dtypes, last.dtypes, strict=True)
            if a in FLOATS and b in FLOATS}


@dataclass(frozen=True)
class Selected:
    """What op_select_format decides on one chip: float (input0, output0) pairs, or why it decides nothing."""

    pairs: tuple[tuple[str, str], ...] | None
    why_unknown: str = ""
    modules: tuple[str, ...] = ()


def select_pairs(family: str, module_name: str, source: Callable[[str], str | None]) -> Selected:
    """The float pairs `module_name`'s op_select_format offers on `family`, or unknown with the reason."""
    reader = Reader(family, source)
    try:
        ways = reader.select_format(module_name)
    except (GiveUp, RecursionError) as exc:
        return Selected(None, str(exc) or type(exc).__name__, tuple(sorted(reader.read)))
    if not ways:
        return Selected(None, "every way ends in an error", tuple(sorted(reader.read)))
    results: list[tuple[dict[tuple[str, int, int], bool], frozenset[tuple[str, str]]]] = []
    for way in ways:
        if not isinstance(way.returned, Params):
            return Selected(None, "a way returns something other than get_dynamic_param_in_json's params",
                            tuple(sorted(reader.read)))
        columns = _columns(way.returned)
        if columns is None:
            return Selected(None, "input0's or output0's dtypes are not known on a way", tuple(sorted(reader.read)))
        results.append((way.chip, frozenset(columns)))
    sites = sorted({site for chip, _ in results for site in chip})
    unions = set()
    for answers in itertools.product((False, True), repeat=min(len(sites), 10)):
        chosen = dict(zip(sites, answers, strict=False))
        union: frozenset[tuple[str, str]] = frozenset().union(
            *(pairs for chip, pairs in results if all(chosen.get(s, v) == v for s, v in chip.items())))
        unions.add(union)
    if len(sites) > 10 or len(unions) != 1:
        return Selected(None, "what it offers depends on something asked of the chip that the snapshot does not say",
                        tuple(sorted(reader.read)))
    return Selected(tuple(sorted(next(iter(unions)))), "", tuple(sorted(reader.read)))
