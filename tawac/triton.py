"""Triton kernels from Python, compiled by tawac:

    import tawac.triton
    k = tawac.triton.compile(matmul_kernel, signature={...}, constexprs={...})
    k[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), ..., BLOCK_SIZE_M=128, ...)

`compile` runs Triton's front end (`tawac[triton]`, no GPU needed) for the kernel's TTIR,
then `from_ttir`: tawac compiles the TTIR (`convert-ttir`, the default pipeline, the
compile cache) and returns a `TritonKernel` called as Triton's kernel is, with the same
arguments: each pointer argument a torch tensor, then the integers. The launch builds,
per tensor of the tile kernel, a strided view of the pointer's tensor from the size and
stride arguments the pointer analysis tied to it (`tawac.analysis.pointers`), and checks
what TMA needs: the contiguous dimension's stride is 1 (else one `LaunchError` naming
the argument). The grid Triton would launch is accepted and not used: tawac launches one
CTA per SM over the tiles its own tile order visits (or a plain grid where the call's
tuning table entry says so: `k.tune(*args, space=...)` measures, `tawac.tools.tune_triton`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tawac.runtime.cuda_driver import sm_count as _sms
from tawac.runtime.plans import program_count
from tawac.support.diagnostics import CompileError
from tawac.tools.tune_triton import entry_applies, function_source, load_table, table_path


@dataclass(frozen=True)
class TensorArg:
    """How one `!tile.tensor` argument is built from Triton's arguments: the pointer's
    position, and per dimension (outermost first) the position of the argument that
    sizes it (None: the size is taken from the tensor's storage, `storage_sizes`) and of
    its stride (None: stride 1), times a constant (`scales`, per dimension; empty: all 1:
    a row of a constexpr length, `off_m * HEAD_DIM`, has stride None times HEAD_DIM)."""

    pointer: int
    sizes: tuple[int | None, ...]
    strides: tuple[int | None, ...]
    names: tuple[str, ...]
    scales: tuple[int, ...] = ()

    def stride_values(self, args: Sequence[Any]) -> list[int]:
        """The strides, in elements, that the call's arguments `args` give."""
        scales = self.scales or (1,) * len(self.strides)
        return [
            c * (1 if s is None else int(args[s]))
            for s, c in zip(self.strides, scales, strict=True)
        ]


@dataclass(frozen=True)
class Abi:
    """How Triton's arguments become the tile kernel's (`kernel_abi`): the TTIR's
    argument names; per tensor argument how it is built (`TensorArg`); the scalars the
    tile kernel keeps, ("float" | "index", position); per host-side descriptor (by
    position) its block shape (its sizes and strides follow it in the TTIR); and the
    integer arguments the program order ties to an output size, (position, position)."""

    names: tuple[str, ...]
    tensors: tuple[TensorArg, ...]
    scalars: tuple[tuple[str, int], ...] = ()
    descs: tuple[tuple[int, tuple[int, ...]], ...] = ()
    ties: tuple[tuple[int, int], ...] = ()


def kernel_abi(ttir: str, filename: str) -> Abi:
    """The ABI of a TTIR kernel as `convert-ttir` converts it."""
    from xdsl.dialects.builtin import Float32Type

    from tawac.analysis.pointers import Range
    from tawac.dialects import tt
    from tawac.ir.ttir import parse_ttir
    from tawac.passes.convert_ttir import plan

    module = parse_ttir(ttir, filename)
    func = next(o for o in module.walk() if isinstance(o, tt.FuncOp))
    args = list(func.body.block.args)
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(args)]
    p = plan(func)
    out = []
    for base, t in p.tensors.items():
        strides: list[int | None] = []
        scales: list[int] = []
        for st in t.strides:
            ((mono, c),) = st.terms.items()
            if c > 0 and mono == ():
                strides.append(None)
            elif c > 0 and len(mono) == 1 and not isinstance(mono[0], Range) and mono[0] in args:
                strides.append(args.index(mono[0]))
            else:
                raise CompileError(f"argument {names[base.index]}: a stride {st} tawac "
                                   "cannot take from the arguments")  # fmt: skip
            scales.append(c)
        sizes = tuple(None if a is None else args.index(a) for a in t.sizes)
        kept = () if all(c == 1 for c in scales) else tuple(scales)
        out.append(TensorArg(base.index, sizes, tuple(strides), t.names, kept))
    out.sort(key=lambda t: t.pointer)
    scalars = [("float", a.index) for a in args if isinstance(a.type, Float32Type) and a.uses]
    scalars += [("index", a.index) for a in p.scalars]
    descs = tuple(
        (a.index, tuple(a.type.block.get_shape()))
        for a in args
        if isinstance(a.type, tt.TensorDescType)
    )
    ties = tuple((a.index, b.index) for a, b in p.ties.items())
    return Abi(tuple(names), tuple(out), tuple(sorted(scalars, key=lambda x: x[1])), descs, ties)


def abi_of(ttir: str, filename: str) -> tuple[list[str], list[TensorArg]]:
    """The TTIR kernel's argument names and, in the tile kernel's argument order, how
    each tensor argument is built from them."""
    abi = kernel_abi(ttir, filename)
    return list(abi.names), list(abi.tensors)


def storage_sizes(sizes: Sequence[int | None], strides: Sequence[int], extent: int) -> list[int]:
    """Sizes for the dimensions no argument sizes (None), from the storage: such a
    dimension reaches the next larger stride of the tensor (`stride_h / stride_m` rows
    for a row index), the outermost one the rest of the storage (`extent` elements from
    the tensor's first): the tensor as it lies in memory, which the accesses of a
    correct Triton program stay in."""
    out = list(sizes)
    for d, size in enumerate(sizes):
        if size is not None:
            continue
        larger = [s for e, s in enumerate(strides) if e != d and s > strides[d]]
        if larger:
            out[d] = max(1, min(larger) // max(strides[d], 1))
            continue
        below = sum((out[e] - 1) * strides[e] for e in range(len(sizes)) if e != d and out[e])
        out[d] = max(1, (extent - below - 1) // max(strides[d], 1) + 1)
    return [int(x) for x in out]


#: Layouts of a `TritonKernel`'s arguments whose views it keeps worked out (`_views`), and
#: of a `TritonFunction`'s calls whose kernel and recipe it keeps.
VIEW_PLANS = 16


def layout_key(args: Sequence[Any], storage: bool = True) -> tuple | None:
    """What decides a call's kernel and how its arguments become the tile kernel's: each
    tensor's shape, strides, offset, dtype, device and (with `storage`: a dimension is
    sized from it) storage size, each integer's value (a size or stride; a float's value
    is passed on, not looked at); None where an argument is anything else (a
    `TensorDescriptor`: the full path)."""
    import torch

    out: list[Any] = []
    for a in args:
        if isinstance(a, torch.Tensor):
            nbytes = a.untyped_storage().nbytes() if storage else 0
            out.append((a.shape, a.stride(), a.storage_offset(), nbytes, a.dtype, a.device))
        elif isinstance(a, bool | int):
            out.append((type(a), a))
        elif isinstance(a, float):
            out.append(float)
        else:
            return None
    return tuple(out)


class TritonKernel:
    """A Triton kernel compiled by tawac: `k[grid](*args, **constexprs)` or `k(*args)`.

    `params` are the positional parameters the Python kernel is called with (default:
    the TTIR's arguments); one that Triton specialized (an integer 1, a `constexprs`
    entry) is not an argument of the TTIR and must be passed with its compiled value. A
    host-side `TensorDescriptor` passed for a descriptor parameter gives its tensor, its
    sizes and strides (the TTIR's arguments after it), and must have the compiled block
    shape."""

    def __init__(
        self,
        names: Sequence[str],
        tensors: Sequence[TensorArg],
        launch: Callable[..., Any],
        constexprs: Mapping[str, Any] | None = None,
        name: str = "kernel",
        params: Sequence[str] | None = None,
        abi: Abi | None = None,
    ):
        self.names = list(names)
        self.tensors = list(tensors)
        self.launch = launch
        self.constexprs = dict(constexprs or {})
        self.name = name
        self.abi = abi if abi is not None else Abi(tuple(names), tuple(tensors))
        default = [n for i, n in enumerate(self.names) if self._part(i) is None]
        self.params = list(params) if params is not None else default
        self._view_plans: dict[tuple, list[tuple[list[int], list[int]] | None]] = {}

    @classmethod
    def from_abi(
        cls,
        abi: Abi,
        launch: Callable[..., Any],
        constexprs: Mapping[str, Any] | None = None,
        name: str = "kernel",
        params: Sequence[str] | None = None,
    ) -> TritonKernel:
        return cls(abi.names, abi.tensors, launch, constexprs, name, params, abi)

    def __getitem__(self, grid) -> Callable[..., Any]:
        return self

    def _part(self, pos: int) -> tuple[int, int] | None:
        """(descriptor position, k) where TTIR argument `pos` is part k of a descriptor."""
        for d, block in self.abi.descs:
            if d < pos <= d + 2 * len(block):
                return d, pos - d - 1
        return None

    def _plan(self) -> list[tuple]:
        """Per TTIR argument where it comes from: ("param", i) the i-th parameter, or
        ("desc", i, k) part k of the descriptor in parameter i (-1: its tensor)."""
        plan = getattr(self, "_plan_cache", None)
        if plan is not None:
            return plan
        index = {n: i for i, n in enumerate(self.params)}
        blocks = dict(self.abi.descs)
        plan = []
        for pos, n in enumerate(self.names):
            part = self._part(pos)
            if part is None and pos not in blocks:
                plan.append(("param", index[n]))
                continue
            d, k = part if part is not None else (pos, -1)
            plan.append(("desc", index[self.names[d]], k, d))
        self._plan_cache = plan
        return plan

    def _fixed(self) -> list[tuple[int, str]]:
        """The parameters compiled in (position, name): a call must pass their values."""
        found = getattr(self, "_fixed_cache", None)
        if found is None:
            found = self._fixed_cache = [
                (i, k)
                for i, k in enumerate(self.params)
                if k not in self.names and k in self.constexprs
            ]
        return found

    def _ttir_args(self, args: Sequence[Any]) -> list[Any]:
        from tawac.runtime.arguments import LaunchError

        if len(args) != len(self.params):
            raise LaunchError(
                f"{self.name} takes {len(self.params)} arguments ({', '.join(self.params)}), "
                f"got {len(args)}"
            )
        for i, k in self._fixed():
            if self.constexprs[k] != args[i]:
                raise LaunchError(
                    f"{self.name} was compiled with {k}={self.constexprs[k]}, called with {args[i]}"
                )
        plan = self._plan()
        if not self.abi.descs and not self.abi.ties:  # each TTIR argument a parameter
            return [args[e[1]] for e in plan]
        blocks = dict(self.abi.descs)
        out: list[Any] = []
        for entry in plan:
            if entry[0] == "param":
                out.append(args[entry[1]])
                continue
            _, i, k, d = entry
            desc = args[i]
            if k < 0:
                if not all(hasattr(desc, f) for f in ("base", "shape", "strides", "block_shape")):
                    raise LaunchError(f"argument {self.names[d]}: a TensorDescriptor is needed")
                if list(desc.block_shape) != list(blocks[d]):
                    raise LaunchError(
                        f"argument {self.names[d]}: block shape {list(desc.block_shape)}, "
                        f"compiled for {list(blocks[d])}"
                    )
                out.append(desc.base)
                continue
            rank = len(blocks[d])
            out.append(desc.shape[k] if k < rank else desc.strides[k - rank])
        for a, b in self.abi.ties:
            if int(out[a]) != int(out[b]):
                raise LaunchError(
                    f"argument {self.names[a]} = {int(out[a])}, but the output's size it "
                    f"orders the tiles of is {int(out[b])} ({_part_name(self, b)}): tawac's "
                    "tiles follow the output's shape"
                )
        return out

    def views(self, *args: Any) -> list[Any]:
        """The tile kernel's tensor arguments: a strided view of each pointer's tensor."""
        return self._views(self._ttir_args(args))

    def _views(self, args: Sequence[Any]) -> list[Any]:
        """The tensor arguments: the tensor itself where it already has the sizes and
        strides the arguments give, else a strided view of it. The sizes and strides are
        worked out once per layout of the arguments (`_view_plan`; a launch is a few
        microseconds of host time, which a decode step's kernel does not hide)."""
        import torch

        key = layout_key(args)
        plan = self._view_plans.get(key) if key is not None else None
        if plan is None:
            plan = self._view_plan(args)
            if key is not None:
                self._view_plans[key] = plan
                if len(self._view_plans) > VIEW_PLANS:
                    del self._view_plans[next(iter(self._view_plans))]
        out = []
        for t, p in zip(self.tensors, plan, strict=True):
            base = args[t.pointer]
            out.append(base if p is None else torch.as_strided(base, *p, base.storage_offset()))
        return out

    def _view_plan(self, args: Sequence[Any]) -> list[tuple[list[int], list[int]] | None]:
        """Per tensor argument, None where the pointer's tensor is the view itself, else
        the (sizes, strides) of the view; one `LaunchError` for what TMA cannot read."""
        import torch

        from tawac.runtime.arguments import LaunchError

        out: list[tuple[list[int], list[int]] | None] = []
        for t in self.tensors:
            base = args[t.pointer]
            if not isinstance(base, torch.Tensor):
                arg = self.names[t.pointer]
                raise LaunchError(f"argument {arg}: a torch tensor is needed for a pointer")
            strides = t.stride_values(args)
            if strides[-1] != 1:
                raise LaunchError(
                    f"argument {self.names[t.pointer]}: its dimension {t.names[-1]} has "
                    f"stride {strides[-1]}; tawac reads it as the contiguous one (TMA needs "
                    "stride 1 there)"
                )
            sizes = [None if i is None else int(args[i]) for i in t.sizes]
            if None in sizes:
                extent = base.untyped_storage().nbytes() // base.element_size()
                sizes = storage_sizes(sizes, strides, extent - base.storage_offset())
            same = list(base.shape) == sizes and list(base.stride()) == strides
            out.append(None if same else (sizes, strides))
        return out

    def __call__(self, *args: Any, **constexprs: Any) -> Any:
        from tawac.runtime.arguments import LaunchError

        for k, v in constexprs.items():
            if k in ("num_warps", "num_stages"):
                continue  # Triton's launch options: tawac decides its own
            if k in self.constexprs and self.constexprs[k] != v:
                raise LaunchError(
                    f"{self.name} was compiled with {k}={self.constexprs[k]}, called with {v}"
                )
        return self.launch(*self.kernel_args(*args))

    def kernel_args(self, *args: Any) -> list[Any]:
        """The tile kernel's arguments in its order: tensors, f32 and index scalars."""
        ttir = self._ttir_args(args)
        tensors = iter(self._views(ttir))
        out: list[Any] = []
        for kind, i in self.order:
            if kind == "tensor":
                out.append(next(tensors))
            else:
                out.append(float(ttir[i]) if kind == "float" else int(ttir[i]))
        return out

    def recipe(self, args: Sequence[Any]) -> list[tuple] | None:
        """How the tile kernel's arguments come from a call's parameters `args`, for
        every call with their layout (`layout_key`): per argument ("tensor", parameter,
        None or the view's (sizes, strides)), ("float" | "index", parameter). None for a
        kernel with host-side descriptors or ties (those calls take the full path)."""
        if self.abi.descs or self.abi.ties:
            return None
        ttir = self._ttir_args(args)
        plan = dict(zip((t.pointer for t in self.tensors), self._view_plan(ttir), strict=True))
        param = [e[1] for e in self._plan()]
        return [(kind, param[i], plan.get(i)) for kind, i in self.order]

    @staticmethod
    def by_recipe(recipe: Sequence[tuple], args: Sequence[Any]) -> list[Any]:
        """The tile kernel's arguments for `args` (`recipe`)."""
        import torch

        out: list[Any] = []
        for kind, i, view in recipe:
            a = args[i]
            if kind == "tensor":
                out.append(a if view is None else torch.as_strided(a, *view, a.storage_offset()))
            else:
                out.append(float(a) if kind == "float" else int(a))
        return out

    @property
    def order(self) -> list[tuple[str, int]]:
        """The tile kernel's arguments: ("tensor", pointer position), ("float" | "index",
        its position), in the TTIR's argument order (`convert-ttir`'s)."""
        found = getattr(self, "_order_cache", None)
        if found is None:
            items = [("tensor", t.pointer) for t in self.tensors] + list(self.abi.scalars)
            found = self._order_cache = sorted(items, key=lambda x: x[1])
        return found


def _part_name(k: TritonKernel, pos: int) -> str:
    part = k._part(pos)
    if part is None:
        return k.names[pos]
    d, i = part
    return f"{k.names[d]}.shape[{i}]"


def from_ttir(
    ttir: str,
    filename: str = "kernel.ttir",
    constexprs: Mapping[str, Any] | None = None,
    params: Sequence[str] | None = None,
    **options: Any,
) -> TritonKernel:
    """The TTIR compiled by tawac (through the compile cache, with the pipeline
    `options`: `PipelineOptions` fields) as a `TritonKernel`."""
    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel

    abi = kernel_abi(ttir, filename)
    built = compile_cached(filename, text=ttir, cubin=True, **options)
    sidecar = json.loads(built.sidecar_text)
    kernel = load_kernel(built.cubin, sidecar)
    return TritonKernel.from_abi(abi, kernel, constexprs, sidecar.get("kernel", "kernel"), params)


def ttir_of(fn, signature: Mapping[str, str], constexprs: Mapping[str, Any]) -> str:
    """Triton's TTIR of `fn` (a `@triton.jit` function) for sm_90a; needs triton."""
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError as e:
        raise CompileError("tawac.triton.compile needs Triton (pip install 'tawac[triton]')") from e
    sig = {**signature, **{k: "constexpr" for k in constexprs}}
    src = ASTSource(fn=fn, signature=sig, constexprs=dict(constexprs))
    return triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ttir"]


def _is_int(ty: str) -> bool:
    return ty in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")


class TritonFunction:
    """`tawac.triton.compile`'s result: compiled on its first call for the integer
    arguments equal to 1, which Triton's launcher specializes as constants (a
    contiguous stride), as Triton's own JIT does, except the arguments that size a
    tensor (a mask bound: one query row must not become a kernel of one row); then one
    `TritonKernel` per such specialization.

    A tuning table (`tuning`, `load_table`; written by `tune`) gives each call
    the pipeline options of its entry (`table_options`); the keyword options override
    them. An attention kernel (a key loop with an online softmax: the sidecar's
    `"key_split"`) whose call has fewer programs than fill the GPU has its keys split
    (`split_k`, flash-decoding) as `tawac.schedule.tuning.launch_splits` says, the rule
    `tawac.torch` applies too, unless the options name a work decomposition;
    `options_for(*args)` shows the choice."""

    def __init__(
        self,
        fn,
        signature: Mapping[str, str],
        constexprs: Mapping[str, Any],
        options: Mapping[str, Any] | None = None,
        tuning: str | os.PathLike | Mapping[str, Any] | None = "auto",
    ):
        self.fn = fn
        self.options = dict(options or {})
        self.signature = dict(signature)
        self.constexprs = dict(constexprs)
        self.params = [n for n in self.signature if n not in self.constexprs]
        self.ints = [i for i, n in enumerate(self.params) if _is_int(self.signature[n])]
        self.name = getattr(fn, "__name__", "kernel")
        self.kernels: dict[tuple[tuple[str, ...], tuple], TritonKernel] = {}
        self.table = load_table(tuning, fn, self.name)
        self._sizes: frozenset[str] | None = None
        self._splits: dict[tuple, dict[str, int]] = {}
        self._calls: dict[tuple, tuple[TritonKernel, list[tuple]]] = {}
        self._storage: bool | None = None  # a dimension is sized from its tensor's storage
        self._ttirs: dict[tuple, str] = {}  # the TTIR by its constexprs (`_ttir`)
        self._abis: dict[str, Abi] = {}  # the ABI by its TTIR (`_abi`)

    def _analyse(self, args: Sequence[Any] | None = None) -> None:
        """From the unspecialized TTIR: the parameters that size a tensor, and whether a
        dimension is sized from its tensor's storage (`layout_key` then reads it). Where
        the unspecialized TTIR is refused (a pointer tensor read along a symbolic stride
        in two orders, which only the launcher's specialization of that stride as 1 makes
        one layout: the tutorial attention backward's `stride_d`), from the TTIR with
        the call's integer arguments equal to 1 specialized."""
        try:
            abi = self._abi(self._ttir(self.constexprs), self.name)
        except CompileError:
            if args is None:
                raise
            ones = [self.params[i] for i in self.ints if _is_one(args[i])]
            if not ones:
                raise
            abi = self._abi(self._ttir({**self.constexprs, **dict.fromkeys(ones, 1)}), self.name)
        pos = {i for t in abi.tensors for i in t.sizes if i is not None}
        self._sizes = frozenset(abi.names[i] for i in pos)
        self._storage = any(None in t.sizes for t in abi.tensors)

    def sizes(self, args: Sequence[Any] | None = None) -> frozenset[str]:
        """The parameters that size a tensor (from the unspecialized TTIR's ABI, or from
        the one `args` specializes where that is refused: `_analyse`)."""
        if self._sizes is None:
            self._analyse(args)
        assert self._sizes is not None
        return self._sizes

    def options_for(self, *args: Any) -> dict[str, Any]:
        """The pipeline options a call with these arguments compiles with: its tuning
        table entry's, the user's over them, and `split_k` where `launch_splits` splits
        an attention's keys (class docstring)."""
        return self._options(self._ones(args), args)

    def _options(self, ones: tuple[str, ...], args: Sequence[Any]) -> dict[str, Any]:
        given = {**self.table_options(args), **self.options}
        return {**given, **self._auto(ones, args, given)}

    def table_sizes(self, args: Sequence[Any]) -> dict[str, int]:
        """What a tuning table entry is looked up by: the call's integer arguments and
        the integer constexprs, by name."""
        sizes = {
            self.params[i]: int(args[i])
            for i in self.ints
            if i < len(args) and isinstance(args[i], int) and not isinstance(args[i], bool)
        }
        for k, v in self.constexprs.items():
            if isinstance(v, int) and not isinstance(v, bool):
                sizes[k] = v
        return sizes

    def table_options(self, args: Sequence[Any]) -> dict[str, Any]:
        """The options of the tuning table's entry for this call (`tawac.schedule.tuning.pick`
        among the entries tuned with this function's constexprs, `entry_applies`); {}
        without a table or an entry, or where the user's options choose another work
        decomposition than the entry's."""
        from tawac.schedule import tuning

        if self.table is None:
            return {}
        entries = [e for e in self.table["entries"] if entry_applies(e, self.constexprs)]
        sub = {**self.table, "args": [], "entries": entries}  # no GEMM wave model here
        picked = tuning.pick(sub, self.table_sizes(args))
        if picked is None or tuning.overrides_decomposition(picked[1], self.options):
            return {}
        return picked[1]

    def __getitem__(self, grid) -> Callable[..., Any]:
        return self

    def specialize(self, *args: Any) -> TritonKernel:
        """The kernel for these arguments (compiled once per set of arguments equal to 1
        and of options, `options_for`)."""
        from tawac.runtime.arguments import LaunchError

        if len(args) != len(self.params):
            raise LaunchError(
                f"{self.name} takes {len(self.params)} arguments ({', '.join(self.params)}), "
                f"got {len(args)}"
            )
        ones = self._ones(args)
        return self._kernel(ones, self._options(ones, args))

    def _ones(self, args: Sequence[Any]) -> tuple[str, ...]:
        ones = tuple(self.params[i] for i in self.ints if _is_one(args[i]))
        if ones:
            ones = tuple(n for n in ones if n not in self.sizes(args))
        return ones

    def _kernel(self, ones: tuple[str, ...], options: Mapping[str, Any]) -> TritonKernel:
        """The kernel for these specialized ones, compiled with `options`."""
        key = (ones, tuple(sorted(options.items())))
        k = self.kernels.get(key)
        if k is None:
            consts = {**self.constexprs, **dict.fromkeys(ones, 1)}
            ttir = self._ttir(consts)
            k = from_ttir(ttir, f"{self.name}.ttir", consts, self.params, **options)
            self.kernels[key] = k
        return k

    def _ttir(self, consts: Mapping[str, Any]) -> str:
        """`ttir_of` the function with these constexprs, once per set of them (the
        analysis, the unsplit kernel and the kernel read the same)."""
        key = tuple(sorted(consts.items()))
        try:
            found = self._ttirs.get(key)
        except TypeError:  # a constexpr that is not hashable
            return ttir_of(self.fn, self.signature, consts)
        if found is None:
            found = self._ttirs[key] = ttir_of(self.fn, self.signature, consts)
        return found

    def _abi(self, ttir: str, filename: str) -> Abi:
        """`kernel_abi` of this TTIR, parsed once (the analysis reads the unspecialized
        TTIR, which the unsplit kernel of a call with no ones compiles too; `filename`
        only names the source in a parse error, which is not kept)."""
        found = self._abis.get(ttir)
        if found is None:
            found = self._abis[ttir] = kernel_abi(ttir, filename)
        return found

    def _auto(
        self, ones: tuple[str, ...], args: Sequence[Any], given: Mapping[str, Any]
    ) -> dict[str, Any]:
        """`{"split_k": s}` where this call's keys are split (class docstring), else {};
        `given`: the options the call has besides (the table's and the user's). The
        kernel compiled with `given` (unsplit) says whether its key loop can be split and
        how long it is (its sidecar's `"key_split"`)."""
        from tawac.schedule.tuning import DECOMPOSITION_KNOBS, launch_splits

        if any(n in given for n in DECOMPOSITION_KNOBS):
            return {}
        layout = layout_key(args)
        key = (ones, layout, json.dumps(dict(given), sort_keys=True, default=str))
        found = self._splits.get(key) if layout is not None else None
        if found is None:
            side, order = self._unsplit(ones, given)
            found = {}
            if "key_split" in side:
                values = order.kernel_args(*args)
                pairs = list(zip(side["args"], values, strict=True))
                shapes = {a["name"]: tuple(v.shape) for a, v in pairs if a["kind"] == "tensor"}
                scalars = {
                    a["name"]: int(v)
                    for a, v in pairs
                    if a["kind"] == "scalar" and a["dtype"] != "f32"
                }
                programs = program_count(side, shapes)
                found = launch_splits(side, programs, _sms(), shapes, scalars, given)
            if layout is not None:
                self._splits[key] = found
        return dict(found)

    def _unsplit(
        self, ones: tuple[str, ...], options: Mapping[str, Any]
    ) -> tuple[dict[str, Any], TritonKernel]:
        """The sidecar of the kernel for these ones compiled with `options` (its PTX only,
        through the compile cache, where it is not loaded already: a split call never
        assembles it), and a `TritonKernel` of its ABI that orders a call's arguments."""
        from tawac.driver import compile_cached

        k = self.kernels.get((ones, tuple(sorted(options.items()))))
        if k is not None:
            return k.launch.sidecar, k
        consts = {**self.constexprs, **dict.fromkeys(ones, 1)}
        ttir = self._ttir(consts)
        built = compile_cached(f"{self.name}.ttir", text=ttir, cubin=False, **options)
        abi = self._abi(ttir, f"{self.name}.ttir")
        order = TritonKernel.from_abi(abi, lambda *a: None, consts, self.name, self.params)
        return json.loads(built.sidecar_text), order

    def tune(self, *args: Any, space: Mapping[str, Sequence[Any]], **how: Any):
        """Times this call's candidates (`space`: option values to try) and records the
        winner in the tuning table (`tawac.tools.tune_triton.tune`, which says what `how`
        takes); returns its `TuneResult`."""
        from tawac.tools.tune_triton import tune

        return tune(self, args, space, **how)

    def __call__(self, *args: Any, **constexprs: Any) -> Any:
        if self._storage is None:
            self._analyse(args)
        key = layout_key(args, bool(self._storage)) if not constexprs else None
        hit = self._calls.get(key) if key is not None else None
        if hit is not None:
            return hit[0].launch(*TritonKernel.by_recipe(hit[1], args))
        k = self.specialize(*args)
        result = k(*args, **constexprs)
        recipe = k.recipe(args) if key is not None else None
        if recipe is not None:
            self._calls[key] = (k, recipe)
            if len(self._calls) > VIEW_PLANS:
                del self._calls[next(iter(self._calls))]
        return result


def _is_one(value: Any) -> bool:
    """An integer argument equal to 1 (Triton's launcher specializes it as a constant)."""
    return isinstance(value, int) and not isinstance(value, bool) and value == 1


def compile(  # noqa: A001 (Triton's word)
    fn,
    *,
    signature: Mapping[str, str],
    constexprs: Mapping[str, Any],
    tuning: str | os.PathLike | Mapping[str, Any] | None = "auto",
    **options: Any,
) -> TritonFunction:
    """`fn` compiled by tawac from Triton's TTIR (module docstring), on its first call;
    `options` are pipeline knobs (`PipelineOptions` fields, as `tawac compile`'s flags:
    `guard_masks=False`, `consumer_warp_groups=2`), checked at the first call, over
    those of the `tuning` table's entry for each call (written by `TritonFunction.tune`;
    "auto": `table_path`'s file beside `fn`'s source where it exists; a path; a loaded
    table; None: none)."""
    return TritonFunction(fn, signature, constexprs, options, tuning)


__all__ = [
    "Abi",
    "TensorArg",
    "TritonFunction",
    "TritonKernel",
    "abi_of",
    "compile",
    "entry_applies",
    "from_ttir",
    "function_source",
    "kernel_abi",
    "load_table",
    "storage_sizes",
    "table_path",
    "ttir_of",
]
