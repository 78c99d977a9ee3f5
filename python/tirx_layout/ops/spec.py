"""What a tile op is: an :class:`OpSpec` states, once, everything the compiler knows of one tile-level operation.

* **Its fields**, by name (:class:`Field` and its kinds): the TVMScript signature ``T.<name>(...)``, how each value
  becomes a TIR argument, and how a call rides in TIR (``ir/op_calls.py``: required arguments first, the others as
  ``"name", value`` pairs; an optional field not given is absent, never a placeholder). :meth:`OpSpec.match`
  recognises a statement of the op and returns an :class:`OpCall` whose fields read by name (``call.scope``).
* **Its rules**, in :meth:`OpSpec.resolve`: they check a call against the function it is in (an
  ``ops.context.OpContext``: target, threads, layouts) and return a validated :class:`Record` — the one object
  VerifyLayouts reports from and every lowering consumes. A rule that needs only the call's own fields goes in
  :meth:`OpSpec.check` (run when the call is built and again by ``resolve``). Rules every op shares are stated here
  once: a region must lie inside its buffer, a register fragment must fit the kernel's threads.
* **Its inference relation**, in :meth:`OpSpec.relations`: how the layouts of its operands relate (:class:`Equal`,
  :class:`OneOf`, :class:`Derived`), which InferLayouts solves.
* **Its lowering per target family**: functions registered with :meth:`OpSpec.lowering`; :meth:`OpSpec.lower`
  picks the one for the function's target (the first of the spec's ``families`` the target has).

Every spec is in :data:`REGISTRY` once it is made; the passes, the pipeline guard, the printer and the TVMScript
names iterate it and name no op.

Example (an op of three fields, registered for the example):
    >>> class Scale(OpSpec):
    ...     name = "example_scale"
    ...     description = "scale a tile in place"
    ...     fields = (RegionField("dst", writes=True), ChoiceField("scope", ("cta", "warp"), default="cta"))
    >>> SCALE = Scale()
    >>> import tvm
    >>> A = tvm.tirx.decl_buffer((4, 8), "float32", "A", scope="shared")
    >>> call = SCALE(A, scope="warp")
    >>> call
    T.example_scale(A[0:4, 0:8], "scope", "warp")
    >>> found = find(tvm.tirx.Evaluate(call))
    >>> found.spec is SCALE, found.scope, found.dst
    (True, 'warp', A[0:4, 0:8])
    >>> del REGISTRY["example_scale"]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import tvm
from tvm import tirx

from ..analysis.thread_placement import scope_gap
from ..hw.memory import check_register_file
from ..hw.targets import targets_with
from ..hw.tcgen05 import TMEM_SCOPE
from ..hw.threads import LEVEL_THREADS, axis_within, level_threads, thread_axis_place
from ..ir.op_calls import OpArguments, full_region, op_call, read_op_call, register_op
from ..ir.spans import source_location
from ..layout import TileLayout
from ..layout.inverse import PlaceInverse
from ..layout.placement import layout_threads, slot_count

#: Every op spec by its name (``"tile_copy"``), in the order they were made.
REGISTRY: dict[str, OpSpec] = {}
#: The default of a field that must be given.
REQUIRED = inspect.Parameter.empty


# ---- fields -----------------------------------------------------------------------------------------------------


class Field:
    """One named argument of an op. ``default`` is :data:`REQUIRED` (the field must be given, and is written first in
    the call, in order), ``None`` (optional: absent unless given) or the value its absence means. A field that is not
    required is written in the call only when it is given, as it was given, so a call prints back as it was written
    (and stays so whatever a pass makes of its value). ``keyword``: given by keyword only in TVMScript. Kinds override
    :meth:`convert` (a TVMScript value, or a TIR value read back from a printed kernel, to the TIR argument),
    :meth:`read` (the TIR argument to what :class:`OpCall` holds) and :meth:`literal`.

    Example:
        >>> Field("x").required, Field("x", default=None).required
        (True, False)
    """

    def __init__(self, name: str, default=REQUIRED, *, keyword: bool = False, label: str | None = None):
        self.name = name
        self.default = default
        self.keyword = keyword
        #: how messages name the field (``"D"`` for ``T.tile_mma``'s ``d``)
        self.label = label or name

    @property
    def required(self) -> bool:
        """Whether the field must be given."""
        return self.default is REQUIRED

    def convert(self, value, op: str):
        """The TIR argument for ``value`` (``op``: ``"T.<name>"``, for messages)."""
        return value

    def read(self, arg):
        """What an :class:`OpCall` holds for the TIR argument ``arg``."""
        return arg

    def literal(self, arg):
        """The Python value a printed kernel spells the TIR argument ``arg`` as (``True`` for a constant flag), or
        ``None`` to print the TIR value."""
        return None


class RegionField(Field):
    """A buffer region (a whole buffer is its full region). ``writes``: the op writes it (so its buffer's layout must
    be injective); ``bounded``: it must lie inside its buffer (a TMA box may reach past a global tensor's edge).

    Example:
        >>> import tvm
        >>> RegionField("src").convert(tvm.tirx.decl_buffer((4, 8), "float32", "A"), "T.tile_copy")
        A[0:4, 0:8]
    """

    def __init__(self, name: str, default=REQUIRED, *, writes=False, bounded=True, keyword=False, label=None):
        super().__init__(name, default, keyword=keyword, label=label)
        self.writes = writes
        self.bounded = bounded

    def convert(self, value, op: str):
        if isinstance(value, tvm.ir.TensorRegion):
            return value
        if isinstance(value, tirx.Buffer):
            return full_region(value)
        raise TypeError(f"{op}: {self.label} must be a buffer or a region of one (A[0:128, k:k + 64]), got {value!r}")


class MbarrierField(Field):
    """An mbarrier: an element ``bars[i]`` of a shared ``uint64`` buffer.

    Example:
        >>> import tvm
        >>> bars = tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")
        >>> MbarrierField("bar").convert(bars[1], "T.mbarrier_arrive")
        bars[1]
    """

    def convert(self, value, op: str):
        if not isinstance(value, tvm.ir.TensorLoad) or str(value.source.dtype) != "uint64":
            raise TypeError(
                f"{op}: {self.name} is an mbarrier, an element of a shared uint64 buffer (bars[i], bars = "
                f'T.alloc_shared((n,), "uint64")), got {value!r}'
            )
        return value


class ConditionField(Field):
    """A boolean that may depend on runtime values (``k > 0``): a Python bool becomes a constant, an integer
    expression ``x`` becomes ``x != 0``.

    Example:
        >>> import tvm
        >>> ConditionField("accumulate", default=False).convert(True, "T.tile_mma")
        T.bool(True)
    """

    def convert(self, value, op: str):
        if isinstance(value, bool | int) and not isinstance(value, tvm.ir.Expr):
            if value not in (0, 1):
                raise ValueError(f"{op}: {self.name} must be a bool or a boolean expression, got {value!r}")
            return tirx.const(bool(value), "bool")
        if not isinstance(value, tvm.ir.Expr):
            raise TypeError(f"{op}: {self.name} must be a bool or a boolean expression (k > 0), got {value!r}")
        dtype = str(value.ty)
        if dtype == "bool":
            return value
        if "int" in dtype:
            return value != tirx.const(0, dtype)
        raise TypeError(f"{op}: {self.name} must be a boolean expression, got {value} of type {dtype}")

    def literal(self, arg):
        return bool(arg.value) if isinstance(arg, tirx.IntImm) else None


class FlagField(Field):
    """A constant True or False: what it chooses is a property of the code emitted, so it cannot be a runtime value.

    Example:
        >>> FlagField("wait", default=True).read(FlagField("wait", default=True).convert(False, "T.tile_mma"))
        False
    """

    def convert(self, value, op: str):
        if isinstance(value, tirx.IntImm) and str(value.ty) == "bool":  # as a printed kernel spells it
            value = bool(value.value)
        if not isinstance(value, bool):
            raise TypeError(f"{op}: {self.name} must be True or False (a constant), got {value!r}")
        return tirx.const(value, "bool")

    def read(self, arg) -> bool:
        return bool(arg.value)

    def literal(self, arg) -> bool:
        return self.read(arg)


class ChoiceField(Field):
    """One of a few strings (a scope).

    Example:
        >>> ChoiceField("scope", ("cta", "warp"), default="cta").convert("lane", "T.tile_copy")
        Traceback (most recent call last):
        ...
        ValueError: T.tile_copy: scope must be one of ['cta', 'warp'], got 'lane'
    """

    def __init__(self, name: str, choices, default=REQUIRED, *, keyword: bool = False):
        super().__init__(name, default, keyword=keyword)
        self.choices = tuple(choices)

    def convert(self, value, op: str):
        text = str(value.value) if isinstance(value, tvm.ir.StringImm) else value
        if text not in self.choices:
            raise ValueError(f"{op}: {self.name} must be one of {list(self.choices)}, got {text!r}")
        return tvm.ir.StringImm(text)

    def read(self, arg) -> str:
        return str(arg.value)


class ScopeField(ChoiceField):
    """Which threads reach the op together: one of the levels of a CTA the op takes (``"cta"``, ``"warpgroup"``,
    ``"warp"``, ``"thread"``); a scope needs at least its threads in the kernel (a rule every op with a scope has).

    Example:
        >>> ScopeField(("cta", "warp")).default
        'cta'
    """

    def __init__(self, choices, default="cta", *, keyword: bool = False):
        super().__init__("scope", choices, default, keyword=keyword)


class CountField(Field):
    """A constant integer in ``low..high``.

    Example:
        >>> CountField("pending", 0, 7, default=0).convert(9, "T.tile_mma_wait")
        Traceback (most recent call last):
        ...
        ValueError: T.tile_mma_wait: pending must be in 0..7, got 9
    """

    def __init__(self, name: str, low: int, high: int, default=REQUIRED, *, keyword: bool = False):
        super().__init__(name, default, keyword=keyword)
        self.low, self.high = low, high

    def convert(self, value, op: str):
        if isinstance(value, tirx.IntImm):
            value = int(value.value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{op}: {self.name} must be an integer constant, got {value!r}")
        if not self.low <= value <= self.high:
            raise ValueError(f"{op}: {self.name} must be in {self.low}..{self.high}, got {value}")
        return tirx.IntImm("int32", value)

    def read(self, arg) -> int:
        return int(arg.value)


class Uint32Field(Field):
    """A 32-bit unsigned value, a constant (checked against ``low..high``, which ``meaning`` names) or an integer
    expression (cast to ``uint32``).

    Example:
        >>> Uint32Field("count", 1, 15, "the arrival count").convert(3, "T.mbarrier_init")
        T.uint32(3)
    """

    def __init__(self, name: str, low: int, high: int, meaning: str, default=REQUIRED, *, keyword: bool = False):
        super().__init__(name, default, keyword=keyword)
        self.low, self.high, self.meaning = low, high, meaning

    def convert(self, value, op: str):
        if isinstance(value, int) and not isinstance(value, bool):
            if not self.low <= value <= self.high:
                raise ValueError(f"{op}: {self.meaning} must be in {self.low}..{self.high} (PTX ISA), got {value}")
            return tirx.const(value, "uint32")
        if not isinstance(value, tvm.ir.Expr) or "int" not in str(value.ty):
            raise TypeError(f"{op}: {self.meaning} must be an integer, got {value!r}")
        # a uint32 value is kept as it is: a printed kernel parses back equal
        return value if str(value.ty) == "uint32" else tirx.Cast("uint32", value)


# ---- a call of an op, and what the rules make of it -------------------------------------------------------------


class OpCall:
    """One statement of an op: its ``spec``, the ``stmt`` (an ``Evaluate``) and its fields by name, each as the
    field's kind reads it (``call.scope`` is ``"warp"``, ``call.dst`` a region, an absent optional field ``None``).

    Example: ``find(stmt).dst`` is the destination region of a ``T.tile_copy`` statement.
    """

    __slots__ = ("fields", "spec", "stmt")

    def __init__(self, spec: OpSpec, stmt, fields: Mapping[str, object]):
        self.spec = spec
        self.stmt = stmt
        self.fields = dict(fields)

    def __getattr__(self, name: str):
        try:
            return self.fields[name]
        except KeyError:
            raise AttributeError(f"T.{self.spec.name} has no field {name!r}") from None

    @property
    def where(self) -> str:
        """``" (line N of FILE)"`` when the statement came from TVMScript source, else ``""``."""
        return source_location(self.stmt)

    def regions(self) -> list[tuple[RegionField, object]]:
        """The region fields that are given, with their regions."""
        given = [(f, self.fields[f.name]) for f in self.spec.fields if isinstance(f, RegionField)]
        return [(f, region) for f, region in given if region is not None]

    def __repr__(self) -> str:
        return f"{self.spec.name}({', '.join(f'{k}={v}' for k, v in self.fields.items())})"


@dataclass(frozen=True)
class Reach:
    """Which threads must reach an op together, and what to say when a condition on the thread index could split
    them: ``"cta"`` -- every thread of the CTA (the op has a CTA barrier, or deals its work to every thread;
    ``refusal`` is formatted with ``guard``, the condition), ``"warpgroup"`` -- whole warpgroups (a ``.sync.aligned``
    instruction over 128 threads), ``"warp"`` -- whole warps (``refusal`` then opens the message).

    Example:
        >>> Reach("cta", "T.x waits for every thread but sits under `if {guard}`").message("tx < 32")
        'T.x waits for every thread but sits under `if tx < 32`'
    """

    level: str
    refusal: str = ""
    #: whether the threads of each unit of ``level`` share the op's whole work (a copy, a fill): then each unit's
    #: threads must hold every element of a register fragment operand (``OpSpec.resolve`` checks it)
    shares_work: bool = False
    #: whether each warp's part of the op is whole-warp (or per-thread) instructions of its own -- ``tcgen05.ld/st``
    #: (a warp moves its own 32 TMEM lanes), a ``T.tile_parallel`` loop -- with nothing shared across warps: a warp may
    #: then skip its part under a condition that is the same across each warp (a warp's vote read back from shared
    #: memory, ``if vote[tx // 32 % 4] < 1``), which VerifyLayouts accepts for such ops only
    per_warp: bool = False

    def message(self, guard) -> str:
        """The refusal for an op under ``guard``."""
        return self.refusal.format(guard=guard)

    @classmethod
    def shared_work(cls, op: str, scope: str, by_holder: bool = False, per_warp: bool = False) -> Reach | None:
        """The reach of an op whose work the threads of its ``scope`` share (a copy, a fill: each thread moves its
        part): all of them must reach it, or parts of the tile are silently left undone. ``"thread"`` scope: none.
        ``by_holder``: each thread works on the fragment elements it holds (a ``T.tile_parallel`` loop, a
        reduction), so a unit of the scope need not hold the whole fragment (``shares_work`` is false). ``per_warp``:
        see the field.

        Example:
            >>> Reach.shared_work("T.tile_copy", "warp").level, Reach.shared_work("T.tile_copy", "thread")
            ('warp', None)
        """
        if scope == "thread":
            return None
        if scope == "cta":
            return cls(
                "cta",
                f"a cta-scope {op} shares its work among every thread of the CTA, but it sits under `if {{guard}}`: "
                "the threads that do not reach it leave their part undone; write the scope of the threads that do "
                '(scope="warpgroup" or "warp")',
                shares_work=not by_holder,
            )
        return cls(
            scope,
            f"a {scope}-scope {op} shares its work among the threads of each {scope}, but ",
            not by_holder,
            per_warp,
        )


@dataclass(frozen=True)
class Record:
    """What an op's rules made of one call: validated, with everything its lowering needs. Each op extends it.
    ``family`` is the target family it lowers for; ``reach`` says which threads must reach it together (``None``:
    no requirement).

    Example: ``spec.resolve(call, ctx).family`` is ``"tcgen05"`` for a ``T.tile_mma`` on sm_100a.
    """

    call: OpCall
    family: str
    reach: Reach | None = field(default=None, kw_only=True)

    def check_reached_by(self, units: set[int]) -> None:
        """Refuse (``ValueError``) when the warpgroups (or warps: the ``reach`` level) reaching the op are not the
        ones it must run on; every op but a few takes any."""


# ---- inference relations ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Equal:
    """The op moves the tile ``src`` into ``dst`` element for element (a copy): an inferred register fragment takes
    the placement of the fragment it is copied from or to (anything else would move data between threads), and for
    any other pair of buffers the cost model scores the pair of layouts by the copy's plan."""

    dst: object
    src: object
    scope: str
    where: str = ""


@dataclass(frozen=True)
class OneOf:
    """The op can read ``buffer`` in one of ``options`` only, in preference order: ``((label, layout, alignment
    bytes), ...)`` (alignment: what the buffer's storage then needs, 0 for nothing). ``why`` names the op and the
    operand; ``requirement`` says what a layout must satisfy, for the error when none fits."""

    buffer: object
    why: str
    options: tuple
    requirement: str = ""

    @property
    def labels(self) -> tuple:
        return tuple(option[0] for option in self.options)


@dataclass(frozen=True)
class Derived:
    """``target``'s layout is a function of its ``sources``' layouts: once they are all decided,
    ``derive(layouts)`` (``layouts``: buffer -> layout) gives the layout an open ``target`` takes (a given layout is
    the lowering's to check). ``why`` names the op, for the decision's reason."""

    target: object
    sources: tuple
    derive: Callable[[dict], object]
    why: str


# ---- the spec ---------------------------------------------------------------------------------------------------


class OpSpec:
    """A tile op (see the module docstring). A subclass sets ``name``, ``description``, ``fields`` and
    ``families`` (target features it lowers on, in preference order; ``"any"`` for every target) and overrides the
    rules; making an instance registers the op with TVM and in :data:`REGISTRY`.

    Example: ``OpSpec`` subclasses are made once per op, at import: ``TILE_COPY = TileCopy()``.
    """

    name: str = ""
    description: str = ""
    fields: tuple[Field, ...] = ()
    families: tuple[str, ...] = ("any",)
    #: How a use of the op sits in TIR: ``"call"``, an ``Evaluate`` of its call; ``"loop"``, a nest of loops that
    #: carry the annotation :attr:`annotation` (``T.tile_parallel``), the outermost being the op's statement.
    form: str = "call"

    @property
    def annotation(self) -> str:
        """The loop annotation of a ``"loop"`` op: ``tirx_layout.<name>``."""
        return f"tirx_layout.{self.name}"

    def __init__(self):
        if not self.name or self.name in REGISTRY:
            raise ValueError(f"an op spec needs a name no other spec has, got {self.name!r}")
        names = [f.name for f in self.fields]
        for f in self.fields:  # the printed pairs "name", value must not be mistaken for a positional choice
            if isinstance(f, ChoiceField) and set(f.choices) & set(names):
                raise ValueError(f"T.{self.name}: a choice of {f.name} is also a field name")
        self.op = register_op(self.name, self.description)
        self.signature = inspect.Signature(
            [
                inspect.Parameter(
                    f.name,
                    inspect.Parameter.KEYWORD_ONLY if f.keyword else inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    default=f.default,
                )
                for f in self.fields
            ]
        )
        self._required = [f for f in self.fields if f.required]
        # what a field that is not given reads as: its default, as the field's kind reads it when given
        self._absent = {
            f.name: None if f.default is None else f.read(f.convert(f.default, self.title))
            for f in self.fields
            if not f.required
        }
        self._lowerings: dict[str, Callable] = {}
        self._run_lowerings: dict[str, Callable] = {}
        REGISTRY[self.name] = self

    @property
    def title(self) -> str:
        """``"T.<name>"``, how messages name the op."""
        return f"T.{self.name}"

    # -- building and reading calls -------------------------------------------------------------------------------

    def __call__(self, *args, **kwargs) -> tvm.ir.Call:
        """The TIR call of the op with these arguments (the signature of its fields); the arguments' own rules
        (:meth:`check`) are checked here."""
        bound = self.signature.bind(*args, **kwargs)
        required, named = [], {}
        for f in self.fields:
            if f.name not in bound.arguments or (bound.arguments[f.name] is None and not f.required):
                continue  # not given: absent from the call (a field's default is what its absence means)
            arg = f.convert(bound.arguments[f.name], self.title)
            if f.required:
                required.append(arg)
            else:
                named[f.name] = arg
        call = op_call(self.op, required, named)
        self.check(self._read(tirx.Evaluate(call), read_op_call(call)))
        return call

    def script(self, *args, **kwargs) -> tvm.ir.Call:
        """``T.<name>(...)`` in TVMScript: :meth:`__call__`, also taking a printed kernel's ``"name", value`` pairs
        after the required arguments (how a call prints where the printer rules are not installed)."""
        start = len(self._required)
        names = {f.name for f in self.fields}
        rest = list(args[start:])
        named = {}
        while len(rest) >= 2 and isinstance(rest[0], str | tvm.ir.StringImm) and str(rest[0]) in names:
            named[str(rest[0])] = rest[1]
            rest = rest[2:]
        if named and not rest:
            return self(*args[:start], **named, **kwargs)
        return self(*args, **kwargs)

    def match(self, stmt) -> OpCall | None:
        """The call of this op ``stmt`` is (an ``Evaluate`` of it), else ``None``."""
        found = read_op_call(stmt)
        if found is None or found.name != self.name:
            return None
        return self._read(stmt, found)

    def _read(self, stmt, found: OpArguments) -> OpCall:
        required, named = found.split(len(self._required))
        unknown = set(named) - {f.name for f in self.fields}
        if unknown:
            raise ValueError(f"{self.title} has no field {sorted(unknown)[0]!r}")
        fields = {f.name: f.read(arg) for f, arg in zip(self._required, required, strict=True)}
        for f in self.fields:
            if not f.required:
                fields[f.name] = f.read(named[f.name]) if f.name in named else self._absent[f.name]
        return OpCall(self, stmt, fields)

    # -- semantics ------------------------------------------------------------------------------------------------

    def check(self, call: OpCall) -> None:
        """The rules that read the call's own fields only (``ValueError``); run when it is built and again by
        :meth:`resolve`. None by default."""

    def resolve(self, call: OpCall, ctx) -> Record:
        """The call checked against its function (``ctx``: an ``OpContext``) and made into the :class:`Record` the
        lowering consumes; ``ValueError`` naming what is wrong. It checks :meth:`check`, the rules every op shares
        (:meth:`check_operands`), then the op's own (:meth:`rules`)."""
        self.check(call)
        self.check_operands(call, ctx)
        record = self.rules(call, ctx)
        if record.reach is not None and record.reach.shares_work:  # each unit of the scope does the whole op
            for f, region in call.regions():
                self._check_fragment_scope(f.label, region.source, record.reach.level, ctx)
        return record

    def check_operands(self, call: OpCall, ctx) -> None:
        """The rules of every op's operands: a bounded region lies inside its buffer (where its bounds are
        constants, or provable), a register fragment reaches no further than the kernel's threads and fits a thread's
        register file, a TMEM region has a layout, a scope has the threads it names, an mbarrier is in shared
        memory."""
        for f in self.fields:
            value = call.fields[f.name]
            if value is None:
                continue
            if isinstance(f, RegionField):
                if f.bounded:
                    self._check_bounds(f.label, value)
                self._check_fragment_threads(value.source, ctx)
                if value.source.scope() == TMEM_SCOPE and value.source not in ctx.layouts:
                    raise ValueError(
                        f"{self.title}'s {f.label} ({value.source.name}) is in tensor memory, which is reached through "
                        "its layout: give it one on TLane/TCol (T.alloc_tmem(shape, dtype, layout=...): "
                        "tmem_datapath_layout, mma_scale_factor_layout, ...)"
                    )
            elif isinstance(f, ScopeField):
                need = LEVEL_THREADS.get(value, 0)
                if need > ctx.threads.count:
                    raise ValueError(
                        f"a {value}-scope {self.title} needs {need} threads; the kernel has {ctx.threads.count}"
                    )
            elif isinstance(f, MbarrierField):
                buffer = value.source
                if buffer.scope() not in ("shared", "shared.dyn"):
                    raise ValueError(
                        f"{self.title}'s {f.name} {value} must be an element of a shared uint64 buffer "
                        f'(T.alloc_shared((n,), "uint64")); {buffer.name} is {buffer.dtype} in {buffer.scope()!r}'
                    )

    def _check_bounds(self, name: str, region) -> None:
        analyzer = tvm.sym.Analyzer()
        buffer = region.source
        for dim, (r, extent) in enumerate(zip(region.region, buffer.shape, strict=True)):
            begin, end = r.min, r.min + r.extent
            if analyzer.can_prove(begin < 0) or analyzer.can_prove(end > extent):
                raise ValueError(
                    f"{self.title}'s {name} region {region} is outside buffer {buffer.name} (shape "
                    f"{tuple(buffer.shape)}): dimension {dim} runs over [{analyzer.simplify(begin)}, "
                    f"{analyzer.simplify(end)}), the buffer has [0, {extent})"
                )

    def _check_fragment_threads(self, buffer, ctx) -> None:
        layout = ctx.layouts.get(buffer)
        if buffer.scope() != "local" or not isinstance(layout, TileLayout) or not layout_threads(layout):
            return
        check_register_file(buffer.name, slot_count(layout), buffer.dtype)
        inverse = PlaceInverse(layout)
        for axis in layout_threads(layout):
            places = thread_axis_place(axis, 0, ctx.threads.count)[1]
            if inverse.reach(axis) > places:
                raise ValueError(
                    f"register fragment {buffer.name} uses {axis} up to {inverse.reach(axis) - 1} but the kernel's "
                    f"{ctx.threads.count} threads give {places} places on it"
                )

    def _check_fragment_scope(self, label: str, buffer, scope, ctx) -> None:
        """A fragment an op runs at scope warp or warpgroup is each unit's own: every unit of the scope copies the
        whole tile with its own threads, so each must hold every element (``analysis.thread_placement.scope_gap``);
        one on axes that reach other units' threads would leave elements unmoved."""
        layout = ctx.layouts.get(buffer)
        if scope in (None, "cta") or buffer.scope() != "local" or not isinstance(layout, TileLayout):
            return
        gap = scope_gap(layout, buffer.shape, scope, ctx.threads.count)
        if gap is None:
            return
        unit, coordinate, place = gap
        size = level_threads(scope, ctx.threads.count)
        axes = layout_threads(layout)
        wide = [a for a in axes if not axis_within(a, scope)]
        own = [a for a in ("laneid", "wid_in_wg", "tid_in_wg") if axis_within(a, scope)]
        where = ", ".join(f"{a} {v}" for a, v in place.items() if a != "m")
        raise ValueError(
            f"{self.title} at scope {scope!r}: its {label} {buffer.name} is a register fragment on thread axes "
            f"{', '.join(axes)} ({layout}); {' and '.join(wide)} {'reaches' if len(wide) == 1 else 'reach'} threads "
            f"outside one {scope}, so each {scope} "
            f"holds only part of it: {scope} {unit} (threads {unit * size}-{(unit + 1) * size - 1}) holds no copy of "
            f"{buffer.name}{list(coordinate)} (on {where}); lay it out on the {scope}'s own axes "
            f"({', '.join(own)}) or run the op at a wider scope"
        )

    def rules(self, call: OpCall, ctx) -> Record:
        """The op's own rules (see :meth:`resolve`); the default has none but the target's family."""
        return Record(call, self.family(ctx))

    def relations(self, call: OpCall) -> tuple:
        """How the layouts of the call's operands relate (:class:`Equal`, :class:`OneOf`, :class:`Derived`); none by
        default: the op reads and writes every layout alike."""
        return ()

    # -- lowering -------------------------------------------------------------------------------------------------

    def family(self, ctx) -> str:
        """The first of ``families`` the function's target has; ``ValueError`` when it has none of them."""
        family = self._target_family(ctx)
        if family is None:
            raise ValueError(self.no_family(ctx))
        return family

    def _target_family(self, ctx) -> str | None:
        return next((f for f in self.families if f == "any" or ctx.arch.has(f)), None)

    def no_family(self, ctx) -> str:
        """The refusal for a target that has none of ``families``."""
        where = "; ".join(f"{family} on {', '.join(targets_with(family))}" for family in self.families)
        return f"{self.title} lowers to instructions target {ctx.arch} does not have ({where})"

    def lowering(self, family: str) -> Callable:
        """Register the decorated ``lower(record, ctx) -> Stmt`` as this op's lowering for ``family``."""
        return self._registrar(self._lowerings, family)

    def run_lowering(self, family: str) -> Callable:
        """Register the decorated ``lower_runs(seq, ctx) -> Stmt`` for ``family``: a lowering that sees each
        statement sequence before its statements are lowered one by one, for an op whose consecutive calls lower
        together (a run of ``T.mbarrier_init`` shares one CTA barrier). It lowers the calls it takes itself."""
        return self._registrar(self._run_lowerings, family)

    def _registrar(self, table: dict, family: str) -> Callable:
        if family not in self.families:  # refused at import, not when a kernel of that target is first lowered
            raise ValueError(f"{self.title} does not lower for {family!r}; its families are {self.families}")

        def register(lower: Callable) -> Callable:
            table[family] = lower
            return lower

        return register

    def lower_runs(self, seq, ctx):
        """``seq`` (a ``SeqStmt``) after this op's run lowering for the target, if it has one. A target with none of
        the op's families has no run lowering: a call of the op there is refused when it is lowered on its own."""
        if not self._run_lowerings:
            return seq
        lower = self._run_lowerings.get(self._target_family(ctx))
        return seq if lower is None else lower(seq, ctx)

    def lower(self, record: Record, ctx):
        """The statements ``record`` lowers to, for its family."""
        try:
            lower = self._lowerings[record.family]
        except KeyError:
            raise ValueError(f"{self.title} has no lowering for {record.family!r} registered") from None
        return lower(record, ctx)


def find(stmt) -> OpCall | None:
    """The call of a registered op that ``stmt`` is (an ``Evaluate`` of it, or the call itself; for a loop op, the
    outermost loop of its nest), else ``None``.

    Example:
        >>> import tvm
        >>> find(tvm.tirx.Evaluate(0)) is None
        True
    """
    if isinstance(stmt, tirx.For):
        for spec in REGISTRY.values():
            if spec.form == "loop" and (call := spec.match(stmt)) is not None:
                return call
        return None
    found = read_op_call(stmt)
    if found is None or found.name not in REGISTRY:
        return None
    spec = REGISTRY[found.name]
    return spec._read(stmt if isinstance(stmt, tirx.Evaluate) else tirx.Evaluate(stmt), found)
