"""A small emitter for the textual IR of the `braid` MLIR dialect.

The emitter knows the shape rule of every braid op: each op method checks its
operands, computes the result type itself and appends one line of MLIR text.
Nothing here is model specific; `braid.models` uses it to build whole models.

    m = Module({"name": "toy", "hidden": 8})
    w = m.param("w", tensor((8, 8)), normal(0.02))
    f = m.function("step", [("x", tensor((2, 8)))])
    y = f.linear(f.args[0], f.get_param(w))
    f.ret(y)
    print(m.render())

The syntax followed is the contract in the dialect's syntax description
(operand order, keywords, printed type lists, `->`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from .errors import BraidError

__all__ = [
    "IRError", "TensorType", "Value", "Init", "Param", "Function", "Module",
    "tensor", "normal", "ZEROS", "ONES", "FLOAT_DTYPES", "INDEX_DTYPE",
    "format_float", "format_attr", "format_attr_dict", "ENTRY_KINDS",
]

FLOAT_DTYPES = ("f32", "bf16", "f16")
INDEX_DTYPE = "i32"
DTYPES = FLOAT_DTYPES + (INDEX_DTYPE,)

# Activations accepted by braid.glu and braid.expert_ffn.
GLU_ACTIVATIONS = ("silu", "gelu", "sigmoid")

_SYMBOL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_$.]*$")
_BARE_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$.]*$")
_SSA_BAD_CHARS = re.compile(r"[^A-Za-z0-9_$.]")


class IRError(BraidError, ValueError):
    """An op was given operands its shape/type rules reject."""


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise IRError(msg)


# --------------------------------------------------------------------------
# Types and values
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class TensorType:
    """A ranked, statically shaped tensor type; shape () is a scalar tensor."""
    shape: tuple
    dtype: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        _check(self.dtype in DTYPES, f"unknown element type {self.dtype!r}")
        for d in self.shape:
            _check(isinstance(d, int) and not isinstance(d, bool) and d > 0,
                   f"bad dimension {d!r} in shape {self.shape}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES

    def with_shape(self, shape: Iterable[int]) -> "TensorType":
        return TensorType(tuple(shape), self.dtype)

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype}>"


def tensor(shape: Iterable[int], dtype: str = "f32") -> TensorType:
    return TensorType(tuple(shape), dtype)


@dataclass(frozen=True)
class Value:
    """An SSA value: its name (without `%`) and type."""
    name: str
    type: TensorType

    @property
    def shape(self) -> tuple:
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    def __str__(self) -> str:
        return f"%{self.name}"


# --------------------------------------------------------------------------
# Attribute printing
# --------------------------------------------------------------------------

def format_float(x: float) -> str:
    """Print a float like MLIR does: C's `%e` (6 decimals) when that reads back
    exactly, otherwise the shortest scientific form that does."""
    x = float(x)
    _check(math.isfinite(x), f"non-finite float attribute {x}")
    for digits in range(6, 18):
        text = "%.*e" % (digits, x)
        if float(text) == x:
            return text
    return "%.17e" % x  # unreachable for IEEE doubles


def _format_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def format_attr(v) -> str:
    """Print a Python value as an MLIR attribute: bool -> true/false,
    int -> `N : i64`, float -> `%e : f64`, str -> quoted, list -> array,
    dict -> dictionary."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v} : i64"
    if isinstance(v, float):
        return f"{format_float(v)} : f64"
    if isinstance(v, str):
        return _format_string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_attr(e) for e in v) + "]"
    if isinstance(v, Mapping):
        return format_attr_dict(v)
    raise IRError(f"cannot print {v!r} as an attribute")


def _attr_entries(d: Mapping) -> list:
    out = []
    for k, v in d.items():
        key = k if _BARE_KEY_RE.match(k) else _format_string(k)
        out.append(f"{key} = {format_attr(v)}")
    return out


def format_attr_dict(d: Mapping) -> str:
    return "{" + ", ".join(_attr_entries(d)) + "}"


def _wrap(items: Sequence[str], first_prefix: str, indent: str, width: int = 100) -> str:
    """Join `items` with ", " starting after `first_prefix`, breaking lines
    (continued at `indent`) so that they stay under `width` where possible."""
    lines, cur = [], first_prefix
    for i, item in enumerate(items):
        piece = item + ("," if i + 1 < len(items) else "")
        if cur not in (first_prefix, indent) and len(cur) + 1 + len(piece) > width:
            lines.append(cur.rstrip())
            cur = indent
        cur += ("" if cur in (first_prefix, indent) else " ") + piece
    lines.append(cur)
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Init:
    """Initializer of a parameter: `normal(std)`, `zeros`, `ones`, or one of
    Mamba's: `s4d_real` (A_log = log(n + 1) along the last dimension) and
    `mamba_dt` (dt_bias = softplus^-1(dt), dt log-uniform in [1e-3, 0.1])."""
    kind: str
    std: float | None = None

    def __post_init__(self) -> None:
        _check(self.kind in ("normal", "zeros", "ones", "s4d_real", "mamba_dt"),
               f"unknown init {self.kind!r}")
        _check((self.kind == "normal") == (self.std is not None),
               "normal init takes a std, the others do not")

    def __str__(self) -> str:
        return f"normal({format_float(self.std)})" if self.kind == "normal" else self.kind


def normal(std: float) -> Init:
    return Init("normal", float(std))


ZEROS = Init("zeros")
ONES = Init("ones")
S4D_REAL = Init("s4d_real")
MAMBA_DT = Init("mamba_dt")


@dataclass(frozen=True)
class Param:
    """A module-level `braid.param` declaration."""
    name: str
    type: TensorType
    init: Init

    def render(self) -> str:
        return f"braid.param @{self.name} {self.init} : {self.type}"


def _check_symbol(name: str) -> None:
    _check(bool(_SYMBOL_RE.match(name)), f"invalid symbol name @{name}")


def _types(values: Sequence[Value]) -> str:
    return ", ".join(str(v.type) for v in values)


def _fn_type_results(types: Sequence[TensorType]) -> str:
    if len(types) == 1:
        return str(types[0])
    return "(" + ", ".join(str(t) for t in types) + ")"


# The kinds of program entry points (the dialect's EntryKind, `braid.entry`).
ENTRY_KINDS = ("train_step", "forward", "prefill", "decode")


# --------------------------------------------------------------------------
# Functions: one method per op
# --------------------------------------------------------------------------

class Function:
    """A func.func being built. Op methods return the result Value(s); the
    optional `name` argument is a hint for the SSA name (made unique)."""

    def __init__(self, name: str, args: Sequence[tuple], private: bool = False,
                 entry: str | None = None):
        _check_symbol(name)
        _check(entry is None or entry in ENTRY_KINDS,
               f"@{name}: entry kind {entry!r} is not one of {', '.join(ENTRY_KINDS)}")
        _check(entry is None or not private, f"@{name}: an entry point is public")
        self.name = name
        self.private = private
        self.entry = entry
        self._names: set = set()
        self._lines: list = []
        self.args = [Value(self._fresh(n), t) for n, t in args]
        self.result_types: tuple | None = None

    # ---- bookkeeping ------------------------------------------------------
    def _fresh(self, hint: str) -> str:
        base = _SSA_BAD_CHARS.sub("_", hint) or "v"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "v" + base
        name, n = base, 0
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        return name

    def _own(self, *values: Value) -> None:
        for v in values:
            _check(isinstance(v, Value) and v.name in self._names,
                   f"{v} is not a value of @{self.name}")

    def _op(self, hint: str, result: TensorType, text: str) -> Value:
        _check(self.result_types is None, f"@{self.name} already returned")
        v = Value(self._fresh(hint), result)
        self._lines.append(f"{v} = {text}")
        return v

    def _same_float(self, *values: Value) -> str:
        self._own(*values)
        dt = values[0].dtype
        for v in values:
            _check(v.type.is_float, f"{v} must be a float tensor, got {v.type}")
            _check(v.dtype == dt, f"element types differ: {values[0].type} vs {v.type}")
        return dt

    # ---- parameters and calls ---------------------------------------------
    def get_param(self, param: Param, name: str | None = None) -> Value:
        return self._op(name or param.name, param.type,
                        f"braid.get_param @{param.name} : {param.type}")

    def call(self, callee: "Function", args: Sequence[Value], name: str = "r"):
        """func.call; returns the single result, or a tuple when there are several."""
        self._own(*args)
        _check(callee.result_types is not None, f"@{callee.name} has no return yet")
        want = [a.type for a in callee.args]
        got = [a.type for a in args]
        _check(want == got, f"call @{callee.name}: argument types {list(map(str, got))} "
                            f"!= {list(map(str, want))}")
        results = [Value(self._fresh(name), t) for t in callee.result_types]
        lhs = ", ".join(str(r) for r in results)
        self._lines.append(
            f"{lhs} = func.call @{callee.name}({', '.join(map(str, args))}) : "
            f"({_types(args)}) -> {_fn_type_results(callee.result_types)}")
        return results[0] if len(results) == 1 else tuple(results)

    def ret(self, *values: Value) -> None:
        self._own(*values)
        _check(self.result_types is None, f"@{self.name} already returned")
        self.result_types = tuple(v.type for v in values)
        self._lines.append(f"return {', '.join(map(str, values))} : {_types(values)}")

    # ---- transformer ops --------------------------------------------------
    def embedding(self, tokens: Value, table: Value, positions: Value | None = None,
                  name: str = "emb") -> Value:
        """y[b,s] = table[tokens[b,s]] (+ positions[s]); tokens i32 [.., S]."""
        self._own(tokens)
        _check(tokens.dtype == INDEX_DTYPE and tokens.type.rank >= 1,
               f"embedding tokens must be an i32 tensor, got {tokens.type}")
        dt = self._same_float(table, *([positions] if positions else []))
        _check(table.type.rank == 2, f"embedding table must be [V,H], got {table.type}")
        hidden = table.shape[1]
        text = f"braid.embedding {tokens}, {table}"
        operands = [tokens, table]
        if positions is not None:
            _check(positions.type.rank == 2 and positions.shape[1] == hidden
                   and positions.shape[0] >= tokens.shape[-1],
                   f"position table {positions.type} must be [P>={tokens.shape[-1]},{hidden}]")
            text += f" positions {positions}"
            operands.append(positions)
        res = tensor(tokens.shape + (hidden,), dt)
        return self._op(name, res, f"{text} : {_types(operands)} -> {res}")

    def linear(self, x: Value, w: Value, bias: Value | None = None,
               transpose_weight: bool = False, name: str = "y") -> Value:
        """x [..., K] @ w [K, N] (+ bias [N]); w is [N, K] with transpose_weight."""
        dt = self._same_float(x, w, *([bias] if bias else []))
        _check(x.type.rank >= 1 and w.type.rank == 2, f"linear: bad ranks {x.type}, {w.type}")
        n, k = w.shape if transpose_weight else reversed(w.shape)
        _check(x.shape[-1] == k, f"linear: {x.type} does not contract with weight {w.type}"
                                 f"{' (transposed)' if transpose_weight else ''}")
        text = f"braid.linear {x}, {w}"
        operands = [x, w]
        if bias is not None:
            _check(bias.shape == (n,), f"linear: bias {bias.type} must be [{n}]")
            text += f" bias {bias}"
            operands.append(bias)
        if transpose_weight:
            text += " transpose_weight"
        res = tensor(x.shape[:-1] + (n,), dt)
        return self._op(name, res, f"{text} : {_types(operands)} -> {res}")

    def batch_matmul(self, a: Value, b: Value, transpose_a: bool = False,
                     transpose_b: bool = False, name: str = "mm") -> Value:
        """[..., M, K] x [..., K, N] -> [..., M, N] (equal leading dims)."""
        dt = self._same_float(a, b)
        _check(a.type.rank >= 2 and a.type.rank == b.type.rank
               and a.shape[:-2] == b.shape[:-2],
               f"batch_matmul: leading dims differ: {a.type}, {b.type}")
        m, ka = reversed(a.shape[-2:]) if transpose_a else a.shape[-2:]
        kb, n = reversed(b.shape[-2:]) if transpose_b else b.shape[-2:]
        _check(ka == kb, f"batch_matmul: contraction mismatch {a.type}, {b.type}")
        flags = (" transpose_a" if transpose_a else "") + (" transpose_b" if transpose_b else "")
        res = tensor(a.shape[:-2] + (m, n), dt)
        return self._op(name, res, f"braid.batch_matmul {a}, {b}{flags} : {_types([a, b])} -> {res}")

    def attention(self, q: Value, k: Value, v: Value, causal: bool = True,
                  scale: float | None = None, rope_theta: float | None = None,
                  name: str = "attn") -> Value:
        """q [B,S,Hq,D], k/v [B,Skv,Hkv,D] with Hq % Hkv == 0 -> [B,S,Hq,D]."""
        self._same_float(q, k, v)
        _check(q.type.rank == 4 and k.type == v.type and k.type.rank == 4,
               f"attention: expected q [B,S,Hq,D] and k, v [B,Skv,Hkv,D] of one type, "
               f"got {q.type}, {k.type}, {v.type}")
        (b, _, hq, d), (bk, _, hkv, dk) = q.shape, k.shape
        _check(b == bk and d == dk, f"attention: batch/head_dim mismatch {q.type}, {k.type}")
        _check(hq % hkv == 0, f"attention: {hq} query heads not a multiple of {hkv} kv heads")
        attrs = {}
        if scale is not None:
            attrs["scale"] = float(scale)
        if rope_theta is not None:
            attrs["rope_theta"] = float(rope_theta)
        text = f"braid.attention {q}, {k}, {v}"
        if causal:
            text += " causal"
        if attrs:
            text += " " + format_attr_dict(attrs)
        return self._op(name, q.type, f"{text} : {_types([q, k, v])} -> {q.type}")

    def rms_norm(self, x: Value, gamma: Value, epsilon: float, name: str = "norm") -> Value:
        self._same_float(x, gamma)
        _check(gamma.shape == x.shape[-1:], f"rms_norm: gamma {gamma.type} vs {x.type}")
        return self._op(name, x.type,
                        f"braid.rms_norm {x}, {gamma} {format_attr_dict({'epsilon': float(epsilon)})}"
                        f" : {_types([x, gamma])} -> {x.type}")

    def layer_norm(self, x: Value, gamma: Value, beta: Value, epsilon: float,
                   name: str = "norm") -> Value:
        self._same_float(x, gamma, beta)
        _check(gamma.shape == x.shape[-1:] and beta.type == gamma.type,
               f"layer_norm: gamma {gamma.type} / beta {beta.type} vs {x.type}")
        return self._op(name, x.type,
                        f"braid.layer_norm {x}, {gamma}, {beta} "
                        f"{format_attr_dict({'epsilon': float(epsilon)})}"
                        f" : {_types([x, gamma, beta])} -> {x.type}")

    def softmax(self, x: Value, name: str = "softmax") -> Value:
        """Softmax over the last dimension."""
        self._same_float(x)
        _check(x.type.rank >= 1, f"softmax: {x.type} has no dimension to normalize")
        return self._op(name, x.type, f"braid.softmax {x} : {x.type}")

    # ---- elementwise ------------------------------------------------------
    def _unary(self, op: str, x: Value, name: str, keyword: str = "") -> Value:
        self._same_float(x)
        return self._op(name, x.type, f"braid.{op} {x}{keyword} : {x.type}")

    def gelu(self, x: Value, tanh: bool = False, name: str = "gelu") -> Value:
        return self._unary("gelu", x, name, " tanh" if tanh else "")

    def silu(self, x: Value, name: str = "silu") -> Value:
        return self._unary("silu", x, name)

    def relu_squared(self, x: Value, name: str = "relu_squared") -> Value:
        """max(x, 0)^2 (Primer, Nemotron-4)."""
        return self._unary("relu_squared", x, name)

    def exp(self, x: Value, name: str = "exp") -> Value:
        return self._unary("exp", x, name)

    def neg(self, x: Value, name: str = "neg") -> Value:
        return self._unary("neg", x, name)

    def _binary(self, op: str, a: Value, b: Value, name: str) -> Value:
        self._same_float(a, b)
        _check(a.type == b.type, f"{op}: operand types differ: {a.type} vs {b.type}")
        return self._op(name, a.type, f"braid.{op} {a}, {b} : {a.type}")

    def add(self, a: Value, b: Value, name: str = "sum") -> Value:
        return self._binary("add", a, b, name)

    def mul(self, a: Value, b: Value, name: str = "prod") -> Value:
        return self._binary("mul", a, b, name)

    def glu(self, act: str, gate: Value, up: Value, name: str = "glu") -> Value:
        """act(gate) * up."""
        _check(act in GLU_ACTIVATIONS, f"glu: unknown activation {act!r}")
        self._same_float(gate, up)
        _check(gate.type == up.type, f"glu: operand types differ: {gate.type} vs {up.type}")
        return self._op(name, gate.type, f"braid.glu {act} {gate}, {up} : {gate.type}")

    # ---- shape ops and loss -----------------------------------------------
    def reshape(self, x: Value, shape: Iterable[int], name: str = "r") -> Value:
        self._own(x)
        res = x.type.with_shape(shape)
        _check(res.numel == x.type.numel, f"reshape: {x.type} -> {res} changes element count")
        return self._op(name, res, f"braid.reshape {x} : {x.type} -> {res}")

    def transpose(self, x: Value, perm: Sequence[int], name: str = "t") -> Value:
        self._own(x)
        perm = [int(p) for p in perm]
        _check(sorted(perm) == list(range(x.type.rank)),
               f"transpose: {perm} is not a permutation of {x.type.rank} dims")
        res = x.type.with_shape(x.shape[p] for p in perm)
        return self._op(name, res,
                        f"braid.transpose {x} [{', '.join(map(str, perm))}] : {x.type} -> {res}")

    def cross_entropy(self, logits: Value, labels: Value, name: str = "loss") -> Value:
        """Mean token cross entropy -> scalar tensor<f32>."""
        self._same_float(logits)
        self._own(labels)
        _check(labels.dtype == INDEX_DTYPE and labels.shape == logits.shape[:-1],
               f"cross_entropy: labels {labels.type} must be i32 of shape {logits.shape[:-1]}")
        res = tensor((), "f32")
        return self._op(name, res, f"braid.cross_entropy {logits}, {labels} : "
                                   f"{_types([logits, labels])} -> {res}")

    # ---- Mamba ------------------------------------------------------------
    def conv1d(self, x: Value, w: Value, bias: Value | None = None, name: str = "conv") -> Value:
        """Causal depthwise conv: x [B,S,C], w [C,K], bias [C]."""
        self._same_float(x, w, *([bias] if bias else []))
        _check(x.type.rank == 3 and w.type.rank == 2 and w.shape[0] == x.shape[2],
               f"conv1d: expected x [B,S,C] and w [C,K], got {x.type}, {w.type}")
        text, operands = f"braid.conv1d {x}, {w}", [x, w]
        if bias is not None:
            _check(bias.shape == (x.shape[2],), f"conv1d: bias {bias.type} must be [C]")
            text += f" bias {bias}"
            operands.append(bias)
        return self._op(name, x.type, f"{text} : {_types(operands)} -> {x.type}")

    def selective_scan(self, x: Value, delta: Value, A: Value, B: Value, C: Value, D: Value,
                       delta_softplus: bool = False, name: str = "scan") -> Value:
        """x, delta [B,S,Di]; A [Di,N]; B, C [B,S,N]; D [Di] -> [B,S,Di]."""
        self._same_float(x, delta, A, B, C, D)
        _check(x.type.rank == 3 and delta.type == x.type,
               f"selective_scan: x {x.type} and delta {delta.type} must be one [B,S,Di] type")
        b, s, di = x.shape
        _check(A.type.rank == 2 and A.shape[0] == di, f"selective_scan: A {A.type} must be [Di,N]")
        n = A.shape[1]
        _check(B.shape == (b, s, n) and C.shape == (b, s, n),
               f"selective_scan: B {B.type}, C {C.type} must be [{b},{s},{n}]")
        _check(D.shape == (di,), f"selective_scan: D {D.type} must be [{di}]")
        ops = [x, delta, A, B, C, D]
        flag = " delta_softplus" if delta_softplus else ""
        return self._op(name, x.type, f"braid.selective_scan {', '.join(map(str, ops))}{flag}"
                                      f" : {_types(ops)} -> {x.type}")

    # ---- mixture of experts -----------------------------------------------
    def router(self, logits: Value, top_k: int, normalize: bool = False,
               name: str = "route") -> tuple:
        """logits [T,E] -> (weights [T,k], expert indices i32 [T,k])."""
        dt = self._same_float(logits)
        _check(logits.type.rank == 2 and 1 <= top_k <= logits.shape[1],
               f"router: expected [T,E] logits with 1 <= top_k <= E, got {logits.type}, k={top_k}")
        _check(self.result_types is None, f"@{self.name} already returned")
        t = logits.shape[0]
        w = Value(self._fresh(name + "_w"), tensor((t, top_k), dt))
        i = Value(self._fresh(name + "_i"), tensor((t, top_k), INDEX_DTYPE))
        flag = " normalize" if normalize else ""
        self._lines.append(f"{w}, {i} = braid.router {logits} top_k {top_k}{flag} : "
                           f"{logits.type} -> {w.type}, {i.type}")
        return w, i

    def dispatch(self, x: Value, indices: Value, experts: int, capacity: int,
                 group_size: int | None = None, name: str = "dispatched") -> Value:
        """x [T,H], indices [T,k] -> [E,G*C,H]: capacity C per group of group_size
        tokens (G = T / group_size; one group of all T when None)."""
        dt = self._same_float(x)
        self._own(indices)
        _check(x.type.rank == 2, f"dispatch: x {x.type} must be [T,H]")
        _check(indices.dtype == INDEX_DTYPE and indices.type.rank == 2
               and indices.shape[0] == x.shape[0],
               f"dispatch: indices {indices.type} must be i32 [{x.shape[0]},k]")
        groups = self._moe_groups(x.shape[0], group_size)
        res = tensor((experts, groups * capacity, x.shape[1]), dt)
        return self._op(name, res, f"braid.dispatch {x}, {indices}{_group_text(group_size)} : "
                                   f"{_types([x, indices])} -> {res}")

    @staticmethod
    def _moe_groups(tokens: int, group_size: int | None) -> int:
        if group_size is None:
            return 1
        _check(group_size >= 1 and tokens % group_size == 0,
               f"MoE group_size {group_size} must divide the {tokens} tokens")
        return tokens // group_size

    def expert_ffn(self, act: str, x: Value, w_up: Value, w_down: Value,
                   gate: Value | None = None, name: str = "experts") -> Value:
        """Per-expert FFN on x [E,C,H]: w_up [E,H,F], w_down [E,F,H], gate [E,H,F]."""
        _check(act in GLU_ACTIVATIONS, f"expert_ffn: unknown activation {act!r}")
        self._same_float(x, w_up, w_down, *([gate] if gate else []))
        _check(x.type.rank == 3, f"expert_ffn: x {x.type} must be [E,C,H]")
        e, _, h = x.shape
        _check(w_up.type.rank == 3 and w_up.shape[:2] == (e, h),
               f"expert_ffn: w_up {w_up.type} must be [{e},{h},F]")
        f = w_up.shape[2]
        _check(w_down.shape == (e, f, h), f"expert_ffn: w_down {w_down.type} must be [{e},{f},{h}]")
        text, operands = f"braid.expert_ffn {act} {x}, {w_up}, {w_down}", [x, w_up, w_down]
        if gate is not None:
            _check(gate.type == w_up.type, f"expert_ffn: gate {gate.type} must match w_up")
            text += f" gate {gate}"
            operands.append(gate)
        return self._op(name, x.type, f"{text} : {_types(operands)} -> {x.type}")

    def combine(self, e: Value, weights: Value, indices: Value, group_size: int | None = None,
                name: str = "combined") -> Value:
        """e [E,C,H], weights [T,k], indices [T,k] -> [T,H]."""
        self._same_float(e, weights)
        self._own(indices)
        _check(e.type.rank == 3 and weights.type.rank == 2,
               f"combine: expected e [E,C,H] and weights [T,k], got {e.type}, {weights.type}")
        _check(indices.dtype == INDEX_DTYPE and indices.shape == weights.shape,
               f"combine: indices {indices.type} must be i32 shaped like {weights.type}")
        groups = self._moe_groups(weights.shape[0], group_size)
        _check(e.shape[1] % groups == 0,
               f"combine: {e.shape[1]} slots do not divide into {groups} groups")
        res = tensor((weights.shape[0], e.shape[2]), e.dtype)
        return self._op(name, res, f"braid.combine {e}, {weights}, {indices}"
                                   f"{_group_text(group_size)} : "
                                   f"{_types([e, weights, indices])} -> {res}")

    # ---- printing ---------------------------------------------------------
    def render(self, indent: str = "  ") -> str:
        _check(self.result_types is not None, f"@{self.name} has no return")
        vis = "private " if self.private else ""
        args = ", ".join(f"{a}: {a.type}" for a in self.args)
        res = f" -> {_fn_type_results(self.result_types)}" if self.result_types else ""
        body = "".join(f"{indent}  {line}\n" for line in self._lines)
        attrs = f' attributes {{braid.entry = "{self.entry}"}}' if self.entry else ""
        return f"{indent}func.func {vis}@{self.name}({args}){res}{attrs} {{\n{body}{indent}}}"


def _group_text(group_size: int | None) -> str:
    return "" if group_size is None else f" group_size {group_size}"


# --------------------------------------------------------------------------
# Module
# --------------------------------------------------------------------------

class Module:
    """A module: the `braid.model` attribute dictionary, parameter
    declarations and functions, printed in that order."""

    # The name diagnostics give the rendered text (braid.compile & co.).
    source_name = "model.mlir"

    def __init__(self, model_attrs: Mapping, attr_name: str = "braid.model"):
        self.model_attrs = dict(model_attrs)
        self.attr_name = attr_name
        self.params: dict = {}
        self.functions: dict = {}

    def param(self, name: str, type: TensorType, init: Init) -> Param:
        _check_symbol(name)
        _check(name not in self.params, f"parameter @{name} declared twice")
        _check(type.is_float, f"parameter @{name} must be a float tensor")
        p = Param(name, type, init)
        self.params[name] = p
        return p

    def function(self, name: str, args: Sequence[tuple], private: bool = False,
                 entry: str | None = None) -> Function:
        """A function; `entry` marks it as a program's entry point of that
        kind (ENTRY_KINDS: `braid.entry`, which the compiler's passes find)."""
        _check(name not in self.functions, f"function @{name} defined twice")
        f = Function(name, args, private, entry)
        self.functions[name] = f
        return f

    def num_parameters(self) -> int:
        return sum(p.type.numel for p in self.params.values())

    def render(self) -> str:
        head = f"module attributes {{{self.attr_name} = {{"
        entries = _attr_entries(self.model_attrs)
        if entries:
            entries[-1] += "}} {"
            header = _wrap(entries, head, " " * len(head))
        else:
            header = head + "}} {"
        parts = [header]
        parts += [f"  {p.render()}" for p in self.params.values()]
        parts += [f.render() for f in self.functions.values()]
        parts.append("}")
        return "\n".join(parts) + "\n"

    @classmethod
    def parse(cls, text: str, name: str = "model.mlir") -> "Module":
        """A module of MLIR text as written (the braid dialect, or linalg that
        Braid raises), for braid.compile, braid.run and the other functions of
        the API: they take MLIR text only this way, so that a mistyped preset
        name or path is an error rather than text. The text is checked by
        Braid's parser now (this needs braid._braid): a syntax error raises
        braid.BraidError at `name`'s line and column."""
        if not isinstance(text, str):
            from .errors import ArgumentTypeError
            raise ArgumentTypeError(f"Module.parse takes MLIR text (a str), found "
                                    f"{type(text).__name__}")
        from .api import _parse
        _parse(text, name)
        return _ParsedModule(text, name)


class _ParsedModule(Module):
    """MLIR text behind Module's interface (Module.parse): it renders as
    written; the builder's methods do not apply to it."""

    def __init__(self, text: str, name: str):
        super().__init__({})
        self.text = text
        self.source_name = name

    def render(self) -> str:
        return self.text

    def param(self, *args, **kwargs):
        raise IRError("a module parsed from MLIR text cannot be extended; build one "
                      "with braid.Module(attrs)")

    function = param

    def num_parameters(self) -> int:
        raise IRError("a module parsed from MLIR text does not count its parameters; "
                      "braid-opt --braid-model-stats does")
