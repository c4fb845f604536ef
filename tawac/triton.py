"""Triton kernels from Python, compiled by tawac (issue 21, item 3):

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
CTA per SM over the tiles its own tile order visits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tawac.diagnostics import CompileError


@dataclass(frozen=True)
class TensorArg:
    """How one `!tile.tensor` argument is built from Triton's arguments: the pointer's
    position, and per dimension the size argument's position and the stride (a position,
    or the constant 1)."""

    pointer: int
    sizes: tuple[int, ...]
    strides: tuple[int | None, ...]  # None: stride 1
    names: tuple[str, ...]


def abi_of(ttir: str, filename: str) -> tuple[list[str], list[TensorArg]]:
    """The TTIR kernel's argument names and, in the tile kernel's argument order, how
    each tensor argument is built from them."""
    from tawac.analysis.pointers import Range
    from tawac.dialects import tt
    from tawac.passes.convert_ttir import plan
    from tawac.ttir import parse_ttir

    module = parse_ttir(ttir, filename)
    func = next(o for o in module.walk() if isinstance(o, tt.FuncOp))
    args = list(func.body.block.args)
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(args)]
    p = plan(func)
    out = []
    for base, dims in p.args.items():
        access = next(a for a in p.accesses.values() if a.base is base)
        strides: list[int | None] = []
        for d in access.dims:
            ((mono, c),) = d.stride.terms.items()
            if mono == () and c == 1:
                strides.append(None)
            elif c == 1 and len(mono) == 1 and not isinstance(mono[0], Range) and mono[0] in args:
                strides.append(args.index(mono[0]))
            else:
                raise CompileError(f"argument {names[base.index]}: a stride {d.stride} tawac "
                                   "cannot take from the arguments")  # fmt: skip
        out.append(TensorArg(base.index, tuple(names.index(n) for n in dims), tuple(strides), dims))
    out.sort(key=lambda t: t.pointer)
    return names, out


class TritonKernel:
    """A Triton kernel compiled by tawac: `k[grid](*args, **constexprs)` or `k(*args)`."""

    def __init__(
        self,
        names: Sequence[str],
        tensors: Sequence[TensorArg],
        launch: Callable[..., Any],
        constexprs: Mapping[str, Any] | None = None,
        name: str = "kernel",
    ):
        self.names = list(names)
        self.tensors = list(tensors)
        self.launch = launch
        self.constexprs = dict(constexprs or {})
        self.name = name

    def __getitem__(self, grid) -> Callable[..., Any]:
        return self

    def views(self, *args: Any) -> list[Any]:
        """The tile kernel's tensor arguments: a strided view of each pointer's tensor."""
        import torch

        from tawac.runtime.launcher import LaunchError

        if len(args) != len(self.names):
            raise LaunchError(
                f"{self.name} takes {len(self.names)} arguments ({', '.join(self.names)}), "
                f"got {len(args)}"
            )
        out = []
        for t in self.tensors:
            base = args[t.pointer]
            arg = self.names[t.pointer]
            if not isinstance(base, torch.Tensor):
                raise LaunchError(f"argument {arg}: a torch tensor is needed for a pointer")
            sizes = [int(args[i]) for i in t.sizes]
            strides = [1 if s is None else int(args[s]) for s in t.strides]
            if strides[-1] != 1:
                raise LaunchError(
                    f"argument {arg}: its dimension {t.names[-1]} has stride {strides[-1]}; "
                    "tawac reads it as the contiguous one (TMA needs stride 1 there)"
                )
            out.append(torch.as_strided(base, sizes, strides, base.storage_offset()))
        return out

    def __call__(self, *args: Any, **constexprs: Any) -> Any:
        from tawac.runtime.launcher import LaunchError

        for k, v in constexprs.items():
            if k in ("num_warps", "num_stages"):
                continue  # Triton's launch options: tawac decides its own
            if k in self.constexprs and self.constexprs[k] != v:
                raise LaunchError(
                    f"{self.name} was compiled with {k}={self.constexprs[k]}, called with {v}"
                )
        return self.launch(*self.views(*args))


def from_ttir(
    ttir: str, filename: str = "kernel.ttir", constexprs: Mapping[str, Any] | None = None
) -> TritonKernel:
    """The TTIR compiled by tawac (through the compile cache) as a `TritonKernel`."""
    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel

    names, tensors = abi_of(ttir, filename)
    built = compile_cached(filename, text=ttir, cubin=True)
    kernel = load_kernel(built.cubin, json.loads(built.sidecar_text))
    name = json.loads(built.sidecar_text).get("kernel", "kernel")
    return TritonKernel(names, tensors, kernel, constexprs, name)


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


def compile(  # noqa: A001 (Triton's word)
    fn, *, signature: Mapping[str, str], constexprs: Mapping[str, Any]
) -> TritonKernel:
    """`fn` compiled by tawac from Triton's TTIR (module docstring)."""
    name = getattr(fn, "__name__", "kernel")
    return from_ttir(ttir_of(fn, signature, constexprs), f"{name}.ttir", constexprs)


__all__ = ["TensorArg", "TritonKernel", "abi_of", "compile", "from_ttir", "ttir_of"]
