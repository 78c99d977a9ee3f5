"""Runs one lowered device function for one CTA, all threads at once.

Every value is a numpy array with one entry per thread (a leading axis of ``threads``), or a scalar when it is the
same for all. Control flow keeps a mask of the threads still running: an ``if`` runs both branches under
complementary masks, a loop whose bounds differ between threads runs to the largest bound with a per-iteration
mask. Memory accesses go through :class:`~tirx_layout.sim.memory.Memory`, which checks bounds and races.

An ``mbarrier`` wait whose phase has not completed suspends the threads of its branch: each statement runs as a
generator step, and the two branches of an ``if`` take turns whenever one of them waits; so do an ``if`` whose
threads wait and the ``if`` statements right after it that those threads skip (``if warp == 0: ...`` then ``if
warp == 1: ...``). A warp-specialised kernel (producer warps in one role, consumer warps in another, handing phases
back and forth) thus runs as the hardware would interleave it. Only when nothing anywhere can move is the wait an
error (it would hang).

Example (an expression evaluated for the four threads of a CTA, one value each):
    >>> import tvm
    >>> interp = CtaInterpreter(Launch(0, {}, {"threadIdx.x": 4}, {}))
    >>> x = tvm.tirx.Var("x", "int32")
    >>> interp.env[x] = np.arange(4, dtype=np.int32)
    >>> interp.eval(tvm.tirx.Max(x * 2, tvm.tirx.const(3))).tolist()
    [3, 3, 4, 6]
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np
import tvm
from tvm import tirx
from tvm.ir import Call, TensorLoad

from ..ir.annotations import SHARED_WINDOW_KEY
from ..ir.device_calls import called_helper, is_cta_barrier
from ..ir.rewrite import walk
from . import (
    atomics,
    cluster,
    conversions,
    cp_async,
    ldmatrix,
    math_functions,
    mbarrier,
    mma_sync,
    packed_math,
    shuffles,
    sync,
    tma_exec,
    tmem,
    warps,
    wgmma,
)
from .addresses import SharedSpace
from .dtypes import numpy_dtype
from .memory import Memory, OutOfBounds, SimulationError

#: The executor of each device-helper family (``ir/device_calls.HELPER_FAMILIES``): a ``dispatch.HelperTable`` that
#: runs a call as ``executor(interpreter, what, args)`` and returns its value (``None`` for a statement).
EXECUTORS = {
    "mbarrier": mbarrier.HELPERS,
    "tma": tma_exec.HELPERS,
    "sync": sync.HELPERS,
    "tcgen05": tmem.HELPERS,
    "wgmma": wgmma.HELPERS,
    "math": packed_math.HELPERS,
    "mmasync": mma_sync.HELPERS,
    "cpasync": cp_async.HELPERS,
    "ldmatrix": ldmatrix.HELPERS,
    "cluster": cluster.HELPERS,
}

_BINARY = {
    tirx.Add: operator.add,
    tirx.Sub: operator.sub,
    tirx.Mul: operator.mul,
    tirx.FloorDiv: lambda a, b: a // b if np.issubdtype(np.result_type(a, b), np.integer) else np.floor(a / b),
    tirx.FloorMod: lambda a, b: a % b if np.issubdtype(np.result_type(a, b), np.integer) else a - np.floor(a / b) * b,
    tirx.Div: lambda a, b: _c_div(a, b) if np.issubdtype(np.result_type(a, b), np.integer) else a / b,
    tirx.Mod: lambda a, b: np.fmod(a, b),
    # CUDA's min/max of floats are fminf/fmaxf (__hmin/__hmax): a NaN operand gives the other one
    tirx.Min: np.fmin,
    tirx.Max: np.fmax,
    tirx.EQ: operator.eq,
    tirx.NE: operator.ne,
    tirx.LT: operator.lt,
    tirx.LE: operator.le,
    tirx.GT: operator.gt,
    tirx.GE: operator.ge,
    tirx.And: np.logical_and,
    tirx.Or: np.logical_or,
    tirx.BitwiseAnd: operator.and_,
    tirx.BitwiseOr: operator.or_,
    tirx.BitwiseXor: operator.xor,
    tirx.LShift: operator.lshift,
    tirx.RShift: operator.rshift,
}


def _intrinsic(call) -> str:
    """An intrinsic's name without its registry prefix: ``tirx.if_then_else`` and ``prim.if_then_else`` alike."""
    name = call.op.name if hasattr(call.op, "name") else str(call.op)
    prefix, _, rest = name.partition(".")
    return rest if prefix in ("tirx", "prim") and rest else name


def _c_div(a, b):
    """Integer division rounding toward zero, as C does."""
    q = np.abs(a) // np.abs(b)
    return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)


@dataclass
class Launch:
    """What one CTA of a kernel sees: its block index, its threads, and the memories it can reach."""

    block: int
    block_index: dict  # "blockIdx.x" -> int
    thread_extents: dict  # "threadIdx.x" -> extent
    globals: dict  # param var -> Memory
    interval: int = 0
    shared: dict = field(default_factory=dict)
    #: the CTA's shared address space: each shared buffer's base address, given at its first allocation
    shared_space: SharedSpace = field(default_factory=SharedSpace)
    #: called as ``observer(node, kind, memory, addresses, active)`` for every shared/global access instruction,
    #: with ``addresses`` of shape ``(threads,)`` or ``(threads, lanes)`` and ``active`` the running threads.
    observer: object = None
    #: the cluster this CTA runs in (``cluster.ClusterRun``), ``None`` for a launch without clusters
    cluster: object = None
    #: the CTA's rank in its cluster, and its coordinates there ("clusterCtaIdx.x" -> int)
    rank: int = 0
    cluster_index: dict = field(default_factory=dict)

    @property
    def threads(self) -> int:
        return int(np.prod(list(self.thread_extents.values()) or [1]))


#: Statements with statements inside: their handlers are generators (see ``CtaInterpreter.steps``).
_COMPOUND = {"SeqStmt", "AttrStmt", "IfThenElse", "For"}


@dataclass
class Blocked:
    """Threads (``mask``) stopped at a wait whose phase has not completed (``message`` says which); ``inside`` are
    the threads that have not left the suspended statement (the stopped ones and those that will go on with them)."""

    message: str
    mask: np.ndarray
    inside: np.ndarray


class CtaInterpreter:
    """Executes a device function body for one CTA. ``launch.interval`` advances at every barrier."""

    def __init__(self, launch: Launch):
        self.launch = launch
        self.count = launch.threads
        self.thread_ids = np.arange(self.count, dtype=np.int64)
        self.global_ids = launch.block * self.count + self.thread_ids
        self.mask = np.ones(self.count, bool)
        self.env: dict = {}
        self.memories: dict = dict(launch.globals)  # buffer var / data var -> Memory
        self.registers: dict = {}  # local buffer var -> (threads, n) array
        self.tmem = None  # the CTA's TensorMemory, made by its first tcgen05 instruction
        self.wgmma = None  # the CTA's wgmma.WgmmaUnit, made by its first wgmma instruction
        self.cp_async = None  # the CTA's cp_async.CopyGroups, made by its first cp.async
        self.mbarriers: dict = {}  # (shared memory name, element) -> mbarrier.Mbarrier
        self.progress = 0  # statements completed so far: how the branches of an if see that one of them moved
        self.sync = None  # memory.SyncClocks: threads ordered through mbarriers, made when first needed
        self.async_reads: list = []  # memory.AsyncRead: shared elements in-flight MMAs still read
        self.pools: dict = {}  # the dynamic shared pool's buffer var -> its base in the shared space
        self.origins: dict = {}  # a pool window's buffer var -> its first element's index in the pool's indexing
        self.pending_window = None  # (buffer name, byte offset) of the pool window the next DeclBuffer opens
        self.windows: dict = {}  # a pool window's shared-space address -> its Memory

    # ---- statements ---------------------------------------------------------------------------------------------

    def run(self, stmt) -> None:
        """Execute ``stmt`` for the threads of the current mask; a wait nothing can complete raises."""
        for blocked in self.steps(stmt):
            raise SimulationError(f"{blocked.message}; no thread that can still run completes that phase")

    def steps(self, stmt):
        """Execute ``stmt`` as a generator that yields a :class:`Blocked` whenever a wait in it cannot return yet;
        whoever resumes it sets ``self.mask`` back to the ``Blocked``'s mask first."""
        name = type(stmt).__name__
        handler = getattr(self, "stmt_" + name, None)
        if handler is None:
            raise SimulationError(f"the simulator does not execute {name} statements")
        if name in _COMPOUND:
            yield from handler(stmt)
            return
        start = self.mask
        while True:
            try:
                handler(stmt)
            except mbarrier.WaitBlocked as waiting:
                self.mask = start
                yield Blocked(str(waiting), start, start)
                continue
            self.progress += 1
            return

    def stmt_SeqStmt(self, stmt):
        entry, seq, k = self.mask, list(stmt.seq), 0
        while k < len(seq):
            self.mask = entry
            first = self.steps(seq[k])
            try:
                waiting = next(first)
            except StopIteration:
                k += 1
                continue
            # statement k waits: the ifs right after it that its waiting threads skip may run meanwhile
            j = k + 1
            while j < len(seq) and self._skipped_by(seq[j], waiting.inside):
                j += 1
            runners = [[first, waiting.mask, waiting.inside]]
            runners += [[self.steps(seq[x]), entry, entry] for x in range(k + 1, j)]
            for blocked in self._take_turns(runners):
                yield Blocked(blocked.message, blocked.mask, entry)  # nobody has left the sequence
            k = j
        self.mask = entry

    def _skipped_by(self, stmt, threads) -> bool:
        """Whether ``threads`` would do nothing in ``stmt``: an ``if`` without ``else`` whose condition (steady, so
        it is the same now as when they get there) is false for all of them."""
        if not isinstance(stmt, tirx.IfThenElse) or stmt.else_case is not None or not self._steady(stmt.condition):
            return False
        cond = np.broadcast_to(self.eval(stmt.condition), (self.count,)).astype(bool)
        return not (cond & threads).any()

    def _steady(self, expr) -> bool:
        """Whether ``expr`` reads nothing that others can change while waiting threads wait: only variables and
        registers (a thread's registers change only when it runs), no shared or global memory, no calls."""
        changing = []

        def load(node):
            if node.source not in self.registers:
                changing.append(node)

        walk(expr, [(TensorLoad, load), (Call, changing.append)])
        return not changing

    def _take_turns(self, runners):
        """Run ``runners`` (``[steps, mask to start or resume under, threads inside]``) in rounds until all finish;
        when a round moves nothing, yield a :class:`Blocked` whose ``inside`` is every thread still in a runner, and
        try again when resumed."""
        runners = list(runners)
        while runners:
            before, blocked = self.progress, None
            for runner in list(runners):
                self.mask = runner[1]
                try:
                    waiting = next(runner[0])
                except StopIteration:
                    runners.remove(runner)
                    continue
                runner[1], blocked = waiting.mask, blocked or waiting
            if blocked is not None and self.progress == before:
                inside = np.logical_or.reduce([runner[2] for runner in runners])
                yield Blocked(blocked.message, blocked.mask, inside)

    def stmt_AttrStmt(self, stmt):
        if stmt.attr_key == SHARED_WINDOW_KEY:  # the DeclBuffer opening the body is a window of the shared pool
            self.pending_window = (stmt.node.value, int(stmt.value.value))
        if stmt.attr_key == "thread_extent":
            tag = stmt.node.thread_tag
            var = stmt.node.var
            if tag.startswith("threadIdx"):
                self.env[var] = self._thread_index(tag)
            elif tag.startswith("clusterCtaIdx"):
                self.env[var] = np.int32(self.launch.cluster_index.get(tag, 0))
            else:
                self.env[var] = np.int32(self.launch.block_index.get(tag, 0))
        yield from self.steps(stmt.body)

    def _thread_index(self, tag: str) -> np.ndarray:
        below = 1
        for name in ("threadIdx.x", "threadIdx.y", "threadIdx.z"):
            extent = self.launch.thread_extents.get(name, 1)
            if name == tag:
                return ((self.thread_ids // below) % extent).astype(np.int32)
            below *= extent
        raise SimulationError(f"unknown thread tag {tag}")

    def stmt_Bind(self, stmt):
        self.env[stmt.var] = self.eval(stmt.value)

    stmt_LetStmt = stmt_Bind

    def stmt_AllocBuffer(self, stmt):
        buffer = stmt.buffer
        # a buffer of vector elements (float32x2) keeps their lanes side by side: element i is lanes i*L .. i*L+L-1
        size = int(np.prod([int(e) for e in buffer.shape])) * _lanes(buffer)
        dtype = numpy_dtype(buffer.dtype)
        scope = buffer.scope()
        if scope == "shared.dyn" and dtype == np.uint8:  # the dynamic shared pool: its windows are the buffers
            if buffer not in self.launch.shared:
                memory = Memory(buffer.name, np.zeros(size, dtype), "shared")
                self.launch.shared[buffer] = memory
                self.launch.shared_space.reserve(memory, int(buffer.data_alignment))
            self.memories[buffer] = self.launch.shared[buffer]
            self.pools[buffer] = self.launch.shared_space.base(self.launch.shared[buffer])
        elif scope == "shared" or scope.startswith("shared."):
            if buffer not in self.launch.shared:
                memory = Memory(buffer.name, np.zeros(size, dtype), "shared")
                self.launch.shared[buffer] = memory
                self.launch.shared_space.place(memory, int(buffer.data_alignment))
            self.memories[buffer] = self.launch.shared[buffer]
        elif scope == "local":
            self.registers[buffer] = np.zeros((self.count, size), dtype)
        else:
            raise SimulationError(f"the simulator does not model {scope!r} allocations ({buffer.name})")

    def stmt_DeclBuffer(self, stmt):
        source = stmt.data
        if isinstance(source, Call) and _intrinsic(source) == "buffer_data":
            source = source.args[0]
        window, self.pending_window = self.pending_window, None
        if source in self.pools and window is not None:
            self._open_window(stmt.buffer, self.pools[source], window)
        elif source in self.memories:
            self.memories[stmt.buffer] = self.memories[source]
        elif source in self.registers:
            self.registers[stmt.buffer] = self.registers[source]
        else:
            raise SimulationError(f"buffer {stmt.buffer.name} views storage the simulator does not know: {stmt.data}")

    def _open_window(self, buffer, pool_base: int, window) -> None:
        """A shared buffer the lowering placed in the dynamic shared pool, its window starting at byte
        ``window[1]``: a memory of its own (bounds and races per buffer, as for a separate allocation) at that place
        of the shared space, indexed from the pool's start as TVM folds the window's element offset into its
        indices. A declaration over an allocation's storage names the allocation's offset and shares its memory."""
        name, offset = window
        if name != buffer.name:
            raise SimulationError(f"the shared-pool window for {name} opens with a declaration of {buffer.name}")
        dtype = numpy_dtype(buffer.dtype)
        start = pool_base + offset
        existing = self.windows.get(start)
        if existing is not None:
            if existing.data.dtype != dtype:
                raise SimulationError(
                    f"{buffer.name} views {existing.name} as {buffer.dtype}; the simulator models views of a shared "
                    "buffer in its own element type only"
                )
            memory = existing
        elif buffer in self.launch.shared:
            memory = self.launch.shared[buffer]
        else:
            size = int(np.prod([int(e) for e in buffer.shape]))
            memory = Memory(buffer.name, np.zeros(size, dtype), "shared")
            self.launch.shared[buffer] = memory
            self.launch.shared_space.place_at(memory, start)
        self.windows[start] = memory
        self.memories[buffer] = memory
        self.origins[buffer] = offset * 8 // tvm.runtime.DataType(str(buffer.dtype)).bits

    def element_index(self, buffer, indices):
        """The element of ``buffer``'s memory that an access with ``indices`` (flat, after TVM's lowering) reaches,
        per thread: the last index less the buffer's origin (non-zero for a window of the shared pool)."""
        index = self.eval(indices[-1])
        origin = self.origins.get(buffer, 0)
        index = index - origin if origin else index
        lanes = _lanes(buffer)
        if lanes > 1:  # an element of a vector-typed buffer: its lanes
            return self._per_thread(index)[:, None] * lanes + np.arange(lanes)
        return index

    def stmt_BufferStore(self, stmt):
        if not self.mask.any():
            return
        value = self.eval(stmt.value)
        index = self.element_index(stmt.buffer, stmt.indices)
        self._observe(stmt, "store", stmt.buffer, index)
        self._store(stmt.buffer, index, value)

    def stmt_Evaluate(self, stmt):
        value = stmt.value
        if is_cta_barrier(value):
            if not self.mask.all():
                raise SimulationError("a barrier is reached by only some threads of the CTA (divergent barrier)")
            self.launch.interval += 1
            if self.tmem is not None:
                self.tmem.order.barrier()
            # a thread that saw an MMA complete, then this barrier: everyone after it is ordered after the MMA
            mbarrier.drop_async_reads(self, lambda read: read.observed.any())
            if self.sync is not None:  # what any thread saw complete, every thread has seen after the barrier
                everyone = self.global_ids - self.sync.base
                self.sync.barrier(everyone)
                mbarrier.drop_async_writes(self, lambda write: write.seen_by(self.sync, everyone).all())
            return
        if isinstance(value, Call | TensorLoad):
            self.eval(value)
        # a constant (no-op) evaluates to nothing

    def stmt_IfThenElse(self, stmt):
        cond = np.broadcast_to(self.eval(stmt.condition), (self.count,)).astype(bool)
        outer = self.mask
        branches = []  # [the branch's steps, the mask to run it under, its threads]: then first, else second
        if (outer & cond).any():
            branches.append([self.steps(stmt.then_case), outer & cond, outer & cond])
        if stmt.else_case is not None and (outer & ~cond).any():
            branches.append([self.steps(stmt.else_case), outer & ~cond, outer & ~cond])
        # neither branch can move: let threads outside this if run, then try again
        yield from self._take_turns(branches)
        self.mask = outer

    def stmt_For(self, stmt):
        start = self._uniform(self.eval(stmt.min), "loop start")
        extent = np.broadcast_to(self.eval(stmt.extent), (self.count,))
        active = extent[self.mask]
        if active.size == 0:
            return
        outer = self.mask
        for i in range(int(active.max())):
            self.mask = outer & (i < extent)
            self.env[stmt.loop_var] = np.asarray(start + i, dtype=numpy_dtype(stmt.loop_var.ty.dtype))
            yield from self.steps(stmt.body)
        self.mask = outer

    def stmt_AssertStmt(self, stmt):
        cond = np.broadcast_to(self.eval(stmt.condition), (self.count,))
        if not cond[self.mask].all():
            raise SimulationError(f"assertion failed: {stmt.message}")

    def _uniform(self, value, what: str) -> int:
        values = np.broadcast_to(value, (self.count,))[self.mask]
        if values.size and (values != values[0]).any():
            raise SimulationError(f"{what} differs between threads")
        return int(values[0]) if values.size else 0

    # ---- memory -------------------------------------------------------------------------------------------------

    def _per_thread(self, value) -> np.ndarray:
        """``value`` with its thread axis spelled out: ``(threads,)`` for scalars, ``(threads, lanes)`` for vectors."""
        value = np.asarray(value)
        return np.broadcast_to(value, (self.count, *value.shape[1:]) if value.ndim else (self.count,))

    def _active(self, shape) -> np.ndarray:
        return np.broadcast_to(self.mask.reshape((-1,) + (1,) * (len(shape) - 1)), shape)

    def _store(self, buffer, index, value):
        index = self._per_thread(np.asarray(index, np.int64))
        values = np.broadcast_to(np.asarray(value), index.shape)
        active = self._active(index.shape)
        if buffer in self.registers:
            regs = self.registers[buffer]
            rows = np.broadcast_to(self.thread_ids.reshape((-1,) + (1,) * (index.ndim - 1)), index.shape)
            self._register_bounds(buffer, regs, index[active])
            if self.wgmma is not None:
                self.wgmma.register_access(buffer.name, regs, rows[active], index[active], write=True)
            regs[rows[active], index[active]] = values[active]
            return
        threads = np.broadcast_to(self.global_ids.reshape((-1,) + (1,) * (index.ndim - 1)), index.shape)
        self._memory(buffer).store(
            index[active], values[active], threads[active], self.launch.block, self.launch.interval, self.sync
        )

    def _load(self, buffer, index):
        index = self._per_thread(np.asarray(index, np.int64))
        active = self._active(index.shape)
        if buffer in self.registers:
            regs = self.registers[buffer]
            out = np.zeros(index.shape, regs.dtype)
            rows = np.broadcast_to(self.thread_ids.reshape((-1,) + (1,) * (index.ndim - 1)), index.shape)
            self._register_bounds(buffer, regs, index[active])
            if self.tmem is not None:
                self.tmem.check_registers(buffer, rows[active], index[active])
            if self.wgmma is not None:
                self.wgmma.register_access(buffer.name, regs, rows[active], index[active], write=False)
            out[active] = regs[rows[active], index[active]]
            return out
        memory = self._memory(buffer)
        out = np.zeros(index.shape, memory.data.dtype)
        threads = np.broadcast_to(self.global_ids.reshape((-1,) + (1,) * (index.ndim - 1)), index.shape)
        out[active] = memory.load(index[active], threads[active], self.launch.block, self.launch.interval, self.sync)
        return out

    def _observe(self, node, kind: str, buffer, index) -> None:
        if self.launch.observer is not None and buffer in self.memories and self.mask.any():
            index = self._per_thread(np.asarray(index, np.int64))
            self.launch.observer(node, kind, self.memories[buffer], index, self.mask)

    def _register_bounds(self, buffer, regs, index):
        bad = (index < 0) | (index >= regs.shape[1])
        if bad.any():
            raise OutOfBounds(
                f"out-of-bounds register access {buffer.name}[{int(index[bad][0])}] (each thread holds {regs.shape[1]})"
            )

    def _memory(self, buffer) -> Memory:
        if buffer not in self.memories:
            raise SimulationError(f"the simulator has no memory for buffer {buffer.name}")
        return self.memories[buffer]

    # ---- expressions --------------------------------------------------------------------------------------------

    def eval(self, expr):
        if isinstance(expr, tirx.IntImm):
            return np.asarray(expr.value, dtype=numpy_dtype(expr.ty.dtype))[()]
        if isinstance(expr, tirx.FloatImm):
            return np.asarray(expr.value, dtype=numpy_dtype(expr.ty.dtype))[()]
        op = _BINARY.get(type(expr))
        if op is not None:
            with np.errstate(over="ignore"):
                return op(self.eval(expr.a), self.eval(expr.b))
        handler = getattr(self, "expr_" + type(expr).__name__, None)
        if handler is None:
            raise SimulationError(f"the simulator does not evaluate {type(expr).__name__} expressions: {expr}")
        return handler(expr)

    def expr_Var(self, expr):
        if expr in self.env:
            return self.env[expr]
        raise SimulationError(f"variable {expr.name} is used before it has a value")

    def expr_TensorLoad(self, expr):
        index = self.element_index(expr.source, expr.indices)
        self._observe(expr, "load", expr.source, index)
        return self._load(expr.source, index)

    def expr_Not(self, expr):
        return np.logical_not(self.eval(expr.a))

    def expr_Cast(self, expr):
        return conversions.convert(self.eval(expr.value), expr.value.ty.dtype, expr.ty.dtype)

    def expr_Select(self, expr):
        return np.where(self.eval(expr.condition), self.eval(expr.true_value), self.eval(expr.false_value))

    def expr_Ramp(self, expr):
        base = self._per_thread(self.eval(expr.base))
        stride = self._per_thread(self.eval(expr.stride))
        return base[:, None] + stride[:, None] * np.arange(int(expr.lanes), dtype=base.dtype)

    def expr_Broadcast(self, expr):
        return np.repeat(self._per_thread(self.eval(expr.value))[:, None], int(expr.lanes), axis=1)

    def expr_Shuffle(self, expr):
        """The lanes ``indices`` of the vectors concatenated (a vector made of scalars, or one lane of a vector)."""
        parts = []
        for vector in expr.vectors:
            value = self._per_thread(self.eval(vector))
            parts.append(value if value.ndim == 2 else value[:, None])
        lanes = np.concatenate(parts, axis=1)[:, [int(i) for i in expr.indices]]
        return lanes[:, 0] if lanes.shape[1] == 1 else lanes

    def expr_Let(self, expr):
        self.env[expr.var] = self.eval(expr.value)
        return self.eval(expr.body)

    def expr_Call(self, expr):
        name = _intrinsic(expr)
        args = expr.args
        if name == "if_then_else":
            return self._guarded_select(args)
        if name == "likely":
            return self.eval(args[0])
        if name == "cuda.warp_sync":
            warps.warp_sync(self)
            return np.int32(0)
        if name == "cuda.warpgroup_sync":  # bar.sync id, 128
            warps.named_barrier(self, self.eval(args[0]), 128)
            return np.int32(0)
        if name in shuffles.MODES:
            return shuffles.shuffle_call(self, name, [self.eval(a) for a in args])
        if name in ("ptx.shfl_sync", "ptx.shfl_sync_p"):
            shuffles.ptx_shuffle(self, expr)
            return np.int32(0)
        if name in atomics.INTRINSICS:
            return atomics.INTRINSICS[name](self, expr)
        if name in _MATH_CALLS:
            return _MATH_CALLS[name](self, expr)
        if math_functions.knows(name):
            return math_functions.evaluate(name, expr.ty.dtype, [self.eval(a) for a in args])
        if name == "reinterpret":
            return np.asarray(self.eval(args[0])).view(numpy_dtype(expr.ty.dtype))
        if name == "bitwise_not":
            return ~self.eval(args[0])
        if name == "large_uint_imm":  # a uint64 constant above 2^63 - 1, as its low and high 32-bit halves
            low, high = (int(self.eval(a)) & 0xFFFFFFFF for a in args)
            return np.uint64(high << 32 | low)
        helper = called_helper(expr)
        if helper is not None:
            value = EXECUTORS[helper.family](self, helper.what, helper.args)
            return np.int32(0) if value is None else value
        raise SimulationError(f"the simulator does not implement the intrinsic {name}")

    def _guarded_select(self, args):
        # Each branch is evaluated only for the threads that take it, so a guarded load cannot fault.
        cond = np.broadcast_to(self.eval(args[0]), (self.count,)).astype(bool)
        outer = self.mask
        self.mask = outer & cond
        then = self.eval(args[1]) if self.mask.any() else 0
        self.mask = outer & ~cond
        other = self.eval(args[2]) if self.mask.any() else 0
        self.mask = outer
        return np.where(cond, then, other)


def _lanes(buffer) -> int:
    """How many lanes each element of ``buffer`` has (2 for a ``float32x2`` buffer)."""
    return int(tvm.runtime.DataType(str(buffer.dtype)).lanes)


def _extern_math(interp, call):
    """``call_pure_extern("__expf", x)`` and the like: a CUDA math function by name."""
    function = str(call.args[0].value)
    if not math_functions.knows(function):
        raise SimulationError(f"the simulator does not implement the external function {function}")
    return math_functions.evaluate(function, call.ty.dtype, [interp.eval(a) for a in call.args[1:]])


def _sigmoid(interp, call):
    # CUDA code generation prints 1 / (1 + exp(0 - x)) in the call's type: each step rounds to it
    x = np.asarray(interp.eval(call.args[0])).astype(numpy_dtype(call.ty.dtype))
    with np.errstate(all="ignore"):
        exp = math_functions.evaluate("exp", call.ty.dtype, [x.dtype.type(0) - x])
        return x.dtype.type(1) / (x.dtype.type(1) + exp)


#: Math calls that are not one function of :mod:`math_functions`, by intrinsic name.
_MATH_CALLS = {
    "call_pure_extern": _extern_math,
    "call_extern": _extern_math,
    "sigmoid": _sigmoid,
    "fma": lambda interp, call: math_functions.fma_rn(*(interp.eval(a) for a in call.args), dtype=call.ty.dtype),
    "cuda.fdividef": lambda interp, call: math_functions.evaluate(
        "__fdividef", "float32", [interp.eval(a) for a in call.args]
    ),
    "isnan": lambda interp, call: np.isnan(np.asarray(interp.eval(call.args[0])).astype(np.float64)),
    "isinf": lambda interp, call: np.isinf(np.asarray(interp.eval(call.args[0])).astype(np.float64)),
    "isfinite": lambda interp, call: np.isfinite(np.asarray(interp.eval(call.args[0])).astype(np.float64)),
}
