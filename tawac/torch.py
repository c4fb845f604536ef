"""tawac kernels as PyTorch operators.

    import tawac.torch
    gemm = tawac.torch.kernel("examples/gemm.mlir")    # params={...}, stages=3, ...
    c = gemm(a, b)         # functional: the pure outputs are allocated and returned
    gemm(a, b, c)          # in place: every argument given, the outputs written
    f = torch.compile(lambda a, b: gemm(a, b) * 2, fullgraph=True)

A `TorchKernel` stands for one kernel source with its compile-time parameters and
pipeline options. Per call it takes the size of every named dimension from the tensors
(sidecar "args" dims), picks the configuration of the nearest bucket of the kernel's
tuning table (`tawac.schedule.tuning`; user `params` / options override the table's), compiles it
through the driver's compile path and the disk cache (`tawac.driver.compile_cached`) at
its first use and launches it (`tawac.runtime.load_kernel`) on the tensors' device and its
current CUDA stream. The configuration chosen for a tuple of shapes is memoised.

Each TorchKernel is also one or two `torch.library` custom operators in the `tawac`
namespace, `<kernel>_<hash>` (functional: the non-output arguments in, the pure outputs
out) and `<kernel>_<hash>_inplace` (every argument, the written ones mutated), with fake
implementations, so that `torch.compile(fullgraph=True)` sees one opaque node per call.
In plain eager mode (not compiling; no dispatch mode, torch-function mode or functorch
transform; plain tensors and numbers; no input that autograd records) a call runs the
implementation directly: going through `torch.ops` adds about 50 µs of host time per
call on the 2-core development VM (CPU tensors, a no-op launch: 60-75 µs through the op,
10 µs direct in place, 20 µs functional with the output's allocation; README "From
PyTorch"), several times the launch itself. Both paths check the same things with the
same messages.

Pure outputs are the tensor arguments of access "write" in the sidecar (stored, never
loaded); a sidecar without "access" marks every tensor read and written, which leaves
only the in-place form. A kernel has no autograd formula of its own (use its outputs as
constants); `attention` is differentiable: its forward saves the log-sum-exp and its
backward runs the attention backward's kernels; so are `matmul` and `linear`, whose
backward runs the GEMM in the operand layouts it needs (`examples/gemm.mlir`,
`gemm_nn.mlir`, `gemm_tn.mlir`).
"""

from __future__ import annotations

import hashlib
import json
import keyword
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import torch

from tawac.runtime.arguments import (
    FLOAT_SCALAR_DTYPES,
    INT_SCALAR_DTYPES,
    TENSOR_DTYPES,
    LaunchError,
    _check_dim_names,
    _check_scalar,
    _check_tensor,
)
from tawac.runtime.cuda_driver import sm_count as _sms
from tawac.runtime.launcher import Kernel, load_kernel
from tawac.runtime.plans import program_count
from tawac.schedule import tuning
from tawac.support.options import PipelineOptions

__all__ = ["TorchKernel", "attention", "attention_params", "kernel", "linear", "matmul"]

NAMESPACE = "tawac"
ACCESSES = frozenset({"read", "write", "readwrite", "none"})
OUTPUT_ACCESS = "write"
WRITTEN_ACCESS = frozenset({"write", "readwrite"})
# Shapes tuples whose configuration a TorchKernel remembers before it starts afresh.
MEMO_LIMIT = 4096
OPTION_NAMES = frozenset(f.name for f in fields(PipelineOptions))
# Device types the kernels run on (the CPU tests add "cpu" to run the real path there).
DEVICE_TYPES = frozenset({"cuda"})
_SCHEMA_RESERVED = frozenset({"Tensor", "float", "int", "bool", "str", "None", "self", "out"})
_PLAIN_TYPES = frozenset({torch.Tensor, torch.nn.Parameter, float, int})

# op base name -> the TorchKernel its implementations run (the latest one made: two
# TorchKernels of one name have the same source, parameters, options and table).
_KERNELS: dict[str, TorchKernel] = {}
_DEFINED: set[str] = set()


def compile_cached(
    source: str | os.PathLike, *, params: Mapping[str, Any] | None = None, **options
):
    """`tawac.driver.compile_cached` (`text`, among `options`, is the source's text as read
    once), imported at the first compilation (tests replace this module attribute)."""
    from tawac.driver import compile_cached as impl

    return impl(source, params=params, **options)


def kernel(
    source: str | os.PathLike,
    *,
    params: Mapping[str, Any] | None = None,
    tuning: str | os.PathLike | Mapping[str, Any] | None = "auto",
    name: str | None = None,
    **options: Any,
) -> TorchKernel:
    """A callable PyTorch operator for the kernel in `source` (a `.mlir` file).

    - `params`: compile-time parameters (`{"BLOCK_N": 128}`); `options`: fields of
      `tawac.support.options.PipelineOptions` (`stages=3`, ...). Both override the tuning table.
    - `tuning`: "auto" reads `x.tune.json` beside `x.mlir` when it exists; a path reads that
      table (which must exist); a dict is a table already loaded; None uses none. A table
      tuned for another version of the source is ignored with a warning.
    - `name`: the kernel's name in the operator names (default: the sidecar's).
    """
    return TorchKernel(source, params=params, tuning=tuning, name=name, **options)


def _config_key(params: Mapping[str, Any], options: Mapping[str, Any]) -> str:
    return json.dumps([params, options], sort_keys=True, default=str)


def _arg_key(spec: Mapping[str, Any]) -> tuple:
    """What a configuration's sidecar must agree on with the kernel's signature."""
    dims = spec.get("dims")
    return (
        spec["name"],
        spec["kind"],
        spec.get("dtype"),
        spec.get("rank"),
        tuple(dims) if dims is not None else None,
        spec.get("access", "readwrite"),
    )


def _schema_name(name: str, i: int) -> str:
    if name.isidentifier() and not keyword.iskeyword(name) and name not in _SCHEMA_RESERVED:
        return name
    return f"arg{i}"


def _describe(spec: Mapping[str, Any]) -> str:
    """`a: bf16[M, K]` or `alpha: f32`."""
    if spec["kind"] == "scalar":
        return f"{spec['name']}: {spec['dtype']}"
    dims = spec.get("dims") or ["?"] * int(spec["rank"])
    return f"{spec['name']}: {spec['dtype']}[{', '.join(str(d) for d in dims)}]"


_current_device = torch.cuda.current_device
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._is_torch_function_mode_enabled
_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)


def _eager(args: Sequence[Any]) -> bool:
    """True when a call may skip the operator dispatch: plain tensors and numbers, no
    dispatch mode (fake tensors, tracing), torch-function mode or functorch transform, and
    no tensor that autograd would record (the operator's autograd kernel then makes a
    backward through it an error rather than a silently missing gradient)."""
    if _dispatch_modes() or _function_modes() or _functorch_active():
        return False
    if not _PLAIN_TYPES.issuperset(map(type, args)):
        return False
    if torch.is_grad_enabled():
        for a in args:
            if isinstance(a, torch.Tensor) and a.requires_grad:
                return False
    return True


class TorchKernel:
    """A tawac kernel as a PyTorch operator; see the module docstring and `kernel`.

    Attributes: `name` (the kernel's), `args` (the sidecar "args"), `op_name`, `op` (the
    functional OpOverload, None when the kernel has no pure output or an output's size
    comes from no input), `inplace_op`, `table` (the tuning table in use or None),
    `kernels` (the loaded Kernel of each configuration compiled so far).
    """

    def __init__(
        self,
        source: str | os.PathLike,
        *,
        params: Mapping[str, Any] | None = None,
        tuning: str | os.PathLike | Mapping[str, Any] | None = "auto",
        name: str | None = None,
        **options: Any,
    ):
        self.source = Path(source)
        try:
            text = self.source.read_text()
        except FileNotFoundError:
            raise FileNotFoundError(f"kernel source {self.source} does not exist") from None
        unknown = sorted(set(options) - OPTION_NAMES)
        if unknown:
            raise TypeError(
                f"unknown option(s) {', '.join(unknown)}; "
                f"options: {', '.join(sorted(OPTION_NAMES))}"
            )
        self._text = text  # what is compiled, hashed and checked against a table
        self.params: dict[str, Any] = dict(params or {})
        self.options: dict[str, Any] = dict(options)
        self.table = self._load_table(tuning, text)
        self.kernels: dict[str, Kernel] = {}
        self._memo: dict[tuple, tuple] = {}
        if self.table is not None:
            args, kname = self.table["args"], self.table["kernel"]
        else:
            sidecar = self._compile(self.params, self.options, check=False).sidecar
            args, kname = sidecar["args"], sidecar["kernel"]
        self.name: str = name or kname
        self.args: list[dict[str, Any]] = [dict(a) for a in args]
        self._signature(self.args)
        digest = hashlib.sha256(
            json.dumps(
                [text, self.params, self.options, self.table, self.name, self.args],
                sort_keys=True,
                default=str,
            ).encode()
        ).hexdigest()[:10]
        base = re.sub(r"\W", "_", self.name)
        if not base or base[0].isdigit():
            base = f"k_{base}"
        self.op_name = f"{base}_{digest}"
        self.op, self.inplace_op = _register(self)

    def __repr__(self) -> str:
        return f"<tawac.torch kernel {self.name} ({self.signature()}) op=tawac::{self.op_name}>"

    # ---- set-up

    def _load_table(self, spec, text: str) -> dict[str, Any] | None:
        found = tuning.table_for(spec, tuning.table_path(self.source), text, str(self.source))
        return found[0] if found is not None else None

    def _signature(self, args: list[dict[str, Any]]) -> None:
        """Indices of inputs and pure outputs, tensor positions, how each output's shape
        follows from the inputs' sizes."""
        for a in args:
            a.setdefault("access", "readwrite")
            if a["access"] not in ACCESSES:
                raise LaunchError(f"argument {a['name']!r}: unknown access {a['access']!r}")
            if a["kind"] == "scalar" and a["dtype"] not in FLOAT_SCALAR_DTYPES | INT_SCALAR_DTYPES:
                raise LaunchError(f"argument {a['name']!r}: unsupported scalar {a['dtype']!r}")
        out = [
            i for i, a in enumerate(args) if a["kind"] == "tensor" and a["access"] == OUTPUT_ACCESS
        ]
        self._outputs = tuple(out)
        self._inputs = tuple(i for i in range(len(args)) if i not in out)
        self._in_specs = [args[i] for i in self._inputs]
        self._n_all, self._n_in = len(args), len(self._inputs)
        # Positions of the tensors in a functional (True) and an in-place (False) call.
        self._tensor_pos = {
            True: tuple(j for j, a in enumerate(self._in_specs) if a["kind"] == "tensor"),
            False: tuple(i for i, a in enumerate(args) if a["kind"] == "tensor"),
        }
        # Sidecar order from (*inputs, *outputs).
        order = self._inputs + self._outputs
        self._perm = tuple(order.index(i) for i in range(len(args)))
        self._functional_error = self._output_shapes_known()

    def _output_shapes_known(self) -> str | None:
        """Why the functional form is not available (None when it is)."""
        if not self._outputs:
            return None
        known = {d for a in self._in_specs if a["kind"] == "tensor" for d in (a.get("dims") or ())}
        if not self._tensor_pos[True]:
            return f"{self.name} has no input tensor to take the outputs' device from"
        for i in self._outputs:
            spec = self.args[i]
            dims = spec.get("dims") or []
            if len(dims) != int(spec["rank"]):
                return f"output {spec['name']!r} has no dimension names in the sidecar"
            for d in dims:
                if d is None or (not isinstance(d, int) and d not in known):
                    return f"the size {d} of output {spec['name']!r} is no input's"
        return None

    def signature(self) -> str:
        """`(a: bf16[M, K], b: bf16[N, K]) -> c: bf16[M, N]`, or all arguments when the
        functional form is not available."""
        if not self._outputs or self._functional_error is not None:
            return ", ".join(_describe(a) for a in self.args)
        ins = ", ".join(_describe(a) for a in self._in_specs)
        outs = ", ".join(_describe(self.args[i]) for i in self._outputs)
        return f"({ins}) -> {outs}" if len(self._outputs) == 1 else f"({ins}) -> ({outs})"

    def _arity_error(self, n: int) -> TypeError:
        all_names = ", ".join(a["name"] for a in self.args)
        written = [a["name"] for a in self.args if a["access"] in WRITTEN_ACCESS]
        inplace = f"{self.name}({all_names}) writing {', '.join(written) or 'nothing'} in place"
        if not self._outputs:
            return TypeError(f"{self.name} takes {self._n_all} arguments: {inplace}; got {n}")
        if self._functional_error is not None:
            return TypeError(
                f"{self.name} takes {self._n_all} arguments: {inplace} (no functional form: "
                f"{self._functional_error}); got {n}"
            )
        return TypeError(
            f"{self.name} takes {self._n_in} arguments, {self.name}{self.signature()}, or "
            f"{self._n_all}: {inplace}; got {n}"
        )

    # ---- configurations

    def _compile(self, params: Mapping[str, Any], options: Mapping[str, Any], *, check=True):
        """Compiles (or loads from the disk cache) one configuration; keeps its Kernel."""
        res = compile_cached(self.source, params=dict(params) or None, text=self._text, **options)
        if check:
            got = [_arg_key(a) for a in res.sidecar["args"]]
            if got != [_arg_key(a) for a in self.args]:
                raise LaunchError(
                    f"{self.source} with params={dict(params)} options={dict(options)} has "
                    f"arguments {got}, the kernel's signature is "
                    f"{[_arg_key(a) for a in self.args]}"
                )
        self.kernels[_config_key(params, options)] = load_kernel(res.cubin, res.sidecar)
        return res

    def config(self, sizes: Mapping[str, int]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(params, options) of the configuration for these dimension sizes: the tuning
        table's entry (`tuning.pick_entry`, with the current GPU's SM count), overridden
        by the user's params and options; where neither names a work decomposition, the
        key split `tuning.launch_splits` gives an attention at these sizes (`split_k`,
        from the unsplit kernel's sidecar: the rule `tawac.triton` applies too)."""
        params, options = dict(self.params), dict(self.options)
        if self.table is not None:
            picked = tuning.pick(self.table, sizes, _sms())
            if picked is not None and not tuning.overrides_decomposition(picked[1], options):
                params, options = {**picked[0], **params}, {**picked[1], **options}
        return params, {**options, **self._key_splits(params, options, sizes)}

    def _key_splits(
        self, params: Mapping[str, Any], options: Mapping[str, Any], sizes: Mapping[str, int]
    ) -> dict[str, int]:
        """`tuning.launch_splits` for the configuration (params, options) at these sizes:
        its unsplit kernel (compiled here, as the call would) says whether its key loop
        can be split; {} where the options name a decomposition."""
        if any(n in options for n in tuning.DECOMPOSITION_KNOBS):
            return {}
        side = self._loaded(params, options).sidecar
        if side.get("key_split") is None:
            return {}
        shapes = {
            a["name"]: [sizes.get(d) if isinstance(d, str) else d for d in a["dims"]]
            for a in side["args"]
            if a["kind"] == "tensor" and a.get("dims") is not None
        }
        if any(not isinstance(n, int) for s in shapes.values() for n in s):
            return {}  # a size no tensor gives: no rule to apply
        programs = program_count(side, shapes)
        return tuning.launch_splits(side, programs, _sms(), shapes, None, options)

    def _loaded(self, params: Mapping[str, Any], options: Mapping[str, Any]) -> Kernel:
        """The configuration's kernel, compiled at its first use."""
        key = _config_key(params, options)
        if key not in self.kernels:
            self._compile(params, options)
        return self.kernels[key]

    def _kernel_for(self, sizes: Mapping[str, int]) -> Kernel:
        return self._loaded(*self.config(sizes))

    # ---- checks (shared by the real and the fake implementations)

    def _check(self, specs: Sequence[Mapping[str, Any]], args: Sequence[Any], fake: bool):
        """Checks tensors (type, dtype, rank, contiguity, one CUDA device, named sizes
        agreeing) and, for the real implementation, numbers (the operator's schema checks
        them otherwise); the fake implementation also takes meta tensors. Returns
        ({dim name: size}, device)."""
        shapes: dict[str, tuple] = {}
        device = first = None
        for spec, value in zip(specs, args, strict=True):
            name = spec["name"]
            if spec["kind"] == "scalar":
                if not fake:
                    _check_scalar(name, spec["dtype"], value)
                continue
            shapes[name] = _check_tensor(name, spec, value)
            if device is None:
                device, first = value.device, name
            elif value.device != device:
                raise LaunchError(
                    f"argument {name!r} is on {value.device}, argument {first!r} on {device}: "
                    "all tensors must be on one device"
                )
        _check_dim_names(specs, shapes)
        if (
            device is not None
            and device.type not in DEVICE_TYPES
            and not (fake and device.type == "meta")
        ):
            raise LaunchError(f"argument {first!r} must be on a CUDA device, got {device}")
        sizes: dict[str, Any] = {}
        for spec in specs:
            if spec["kind"] != "tensor":
                continue
            for d, dim in enumerate(spec.get("dims") or ()):
                if isinstance(dim, str):
                    sizes.setdefault(dim, shapes[spec["name"]][d])
        return sizes, device

    def _output_specs(self, sizes: Mapping[str, Any]) -> list[tuple[tuple, torch.dtype]]:
        out = []
        for i in self._outputs:
            spec = self.args[i]
            shape = tuple(d if isinstance(d, int) else sizes[d] for d in spec["dims"])
            out.append((shape, getattr(torch, TENSOR_DTYPES[spec["dtype"]][0])))
        return out

    def _specs_of(self, functional: bool) -> Sequence[Mapping[str, Any]]:
        return self._in_specs if functional else self.args

    # ---- calls

    def __call__(self, *args):
        """`kernel(*inputs)` returns the pure outputs (one tensor or a tuple);
        `kernel(*all_args)` writes the outputs in place and returns None."""
        if torch.compiler.is_compiling() or not _eager(args):
            n = len(args)
            if n == self._n_in and self.op is not None:
                return self.op(*args)
            if n == self._n_all:
                self.inplace_op(*args)
                return None
            raise self._arity_error(n)
        n = len(args)
        if n == self._n_in and self.op is not None:
            return self._run(args, True)
        if n == self._n_all:
            return self._run(args, False)
        raise self._arity_error(n)

    def _run(self, args: Sequence[Any], functional: bool):
        """The real implementation (of both operators, and of eager calls; those with meta
        tensors get the fake one's)."""
        pos = self._tensor_pos[functional]
        try:
            key = (functional, *[args[i].shape for i in pos])
            device = args[pos[0]].device if pos else None
        except AttributeError:  # not a tensor: the checks say which
            key = device = None
        if device is not None and device.type == "meta":
            return self._fake(args, functional)
        entry = self._memo.get(key) if key is not None else None
        if entry is None:
            sizes, device = self._check(self._specs_of(functional), args, fake=False)
            entry = (self._kernel_for(sizes), self._output_specs(sizes) if functional else ())
            if key is not None:
                if len(self._memo) >= MEMO_LIMIT:
                    self._memo.clear()
                self._memo[key] = entry
        if device is not None and device.type == "cuda" and device.index != _current_device():
            with torch.cuda.device(device):
                return self._launch(entry, args, functional, device)
        return self._launch(entry, args, functional, device)

    def _launch(self, entry: tuple, args: Sequence[Any], functional: bool, device):
        """Allocates the outputs (functional) and launches on the current stream."""
        kern, out_specs = entry
        if not functional:
            kern(*args)
            return None
        outs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in out_specs]
        every = (*args, *outs)
        kern(*[every[i] for i in self._perm])
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _fake(self, args: Sequence[Any], functional: bool):
        """The fake implementation: the same checks, outputs of the right shape and dtype
        on the inputs' device."""
        sizes, device = self._check(self._specs_of(functional), args, fake=True)
        if not functional:
            return None
        outs = [torch.empty(s, dtype=dt, device=device) for s, dt in self._output_specs(sizes)]
        return outs[0] if len(outs) == 1 else tuple(outs)


def _schema(specs: Sequence[Mapping[str, Any]], mutated: set[str], returns: str):
    """A custom op schema over `specs` (schema names from `_schema_name`); returns (schema,
    schema names of the mutated tensors)."""
    parts, names = [], []
    for k, spec in enumerate(specs):
        name = _schema_name(spec["name"], k)
        if spec["kind"] == "scalar":
            parts.append(f"{'float' if spec['dtype'] in FLOAT_SCALAR_DTYPES else 'int'} {name}")
        elif spec["name"] in mutated:
            parts.append(f"Tensor(w{len(names)}!) {name}")
            names.append(name)
        else:
            parts.append(f"Tensor {name}")
    return f"({', '.join(parts)}) -> {returns}", names


def _register(tk: TorchKernel):
    """Defines (once per name) the functional and the in-place operator of a TorchKernel;
    returns their OpOverloads (the functional one None when there is no functional form)."""
    base = tk.op_name
    _KERNELS[base] = tk
    written = {
        a["name"] for a in tk.args if a["kind"] == "tensor" and a["access"] in WRITTEN_ACCESS
    }
    functional = bool(tk._outputs) and tk._functional_error is None
    if base not in _DEFINED:
        if functional:
            n_out = len(tk._outputs)
            returns = "Tensor" if n_out == 1 else f"({', '.join(['Tensor'] * n_out)})"
            schema, mutated = _schema(tk._in_specs, written, returns)

            def impl(*args):
                return _KERNELS[base]._run(args, True)

            def fake(*args):
                return _KERNELS[base]._fake(args, True)

            op = torch.library.custom_op(
                f"{NAMESPACE}::{base}", impl, mutates_args=mutated, schema=schema
            )
            op.register_fake(fake)
        schema, mutated = _schema(tk.args, written, "()")

        def impl_inplace(*args):
            _KERNELS[base]._run(args, False)

        def fake_inplace(*args):
            _KERNELS[base]._fake(args, False)

        op = torch.library.custom_op(
            f"{NAMESPACE}::{base}_inplace", impl_inplace, mutates_args=mutated, schema=schema
        )
        op.register_fake(fake_inplace)
        _DEFINED.add(base)
    ns = getattr(torch.ops, NAMESPACE)
    functional_op = getattr(ns, base).default if functional else None
    return functional_op, getattr(ns, f"{base}_inplace").default


# --- differentiable attention ------------------------------------------------------------------

#: The tile programs of `attention`: the forward that saves the log-sum-exp, and the
#: backward's preprocessing, dK/dV and dQ kernels (in the repository's `examples/`), and
#: their causal and grouped-query forms.
ATTENTION_KERNELS = ("attention_lse", "attention_bwd_pre", "attention_bwd_dkdv", "attention_bwd_dq")
CAUSAL_KERNELS = ("attention_causal_lse", "attention_bwd_dkdv_causal", "attention_bwd_dq_causal")
GQA_KERNELS = ("attention_gqa_lse", "attention_bwd_dkdv_gqa", "attention_bwd_dq_gqa")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
_LOG2E = 1.4426950408889634
_TRAINING: dict[int, dict[str, TorchKernel]] = {}


def attention_params(name: str, head_dim: int) -> dict[str, int]:
    """The compile-time parameters of the attention kernel `name` (one of
    `ATTENTION_KERNELS`, `CAUSAL_KERNELS`, `GQA_KERNELS`) at `head_dim`: the dK/dV kernels
    take 32 queries a step at head dimension 128, 64 at 64 (what fits their accumulators
    in registers)."""
    if name.startswith("attention_bwd_dkdv"):
        return {"HEAD_DIM": head_dim, "BLOCK_M": 32 if head_dim == 128 else 64}
    return {"HEAD_DIM": head_dim}


def _attention_kernels(head_dim: int) -> dict[str, TorchKernel]:
    """The kernels at `head_dim` (`attention_params`), made once."""
    if head_dim not in (64, 128):
        raise LaunchError(f"attention: head dimension {head_dim}; 64 and 128 are supported")
    made = _TRAINING.get(head_dim)
    if made is None:
        names = ATTENTION_KERNELS + CAUSAL_KERNELS + GQA_KERNELS
        missing = [n for n in names if not (EXAMPLES / f"{n}.mlir").exists()]
        if missing:
            raise FileNotFoundError(
                f"attention needs the tile programs {', '.join(missing)} in {EXAMPLES} "
                "(the repository's examples/: install tawac from its source tree)"
            )
        made = {}
        for n in names:
            made[n] = kernel(EXAMPLES / f"{n}.mlir", params=attention_params(n, head_dim))
        _TRAINING[head_dim] = made
    return made


class _Attention(torch.autograd.Function):
    """softmax(Q K^T scale) V with tawac's forward and backward kernels."""

    @staticmethod
    def forward(ctx, q, k, v, scale, causal):
        kernels = _attention_kernels(q.shape[-1])
        grouped = k.shape[1] != q.shape[1]
        if grouped and causal:
            raise LaunchError("attention: causal grouped-query attention is not supported yet")
        variant = "_causal" if causal else "_gqa" if grouped else ""
        forward = kernels[f"attention{variant}_lse"]
        o, lse = forward(q, k, v, scale * _LOG2E)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.scale, ctx.variant = scale, variant
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        kernels = _attention_kernels(q.shape[-1])
        tail = ctx.variant
        do = do.contiguous().to(q.dtype)
        scale = ctx.scale * _LOG2E
        delta = kernels["attention_bwd_pre"](o, do)
        dk, dv = kernels[f"attention_bwd_dkdv{tail}"](q, k, v, do, lse, delta, scale)
        dq = kernels[f"attention_bwd_dq{tail}"](q, k, v, do, lse, delta, scale)
        return dq, dk, dv, None, None


def attention(q, k, v, scale: float | None = None, causal: bool = False):
    """softmax(q k^T * scale) v over [batch, heads, seq, head_dim] bf16 tensors (head_dim 64
    or 128, any sequence length; `scale` defaults to head_dim^-0.5; with `causal`, query i
    attends to keys j <= i; k and v may have fewer heads, each serving H / HK query heads:
    grouped-query attention, not causal), as an autograd function: the forward
    (`examples/attention[_causal|_gqa]_lse.mlir`) also saves each query
    row's log-sum-exp, and the backward recomputes the probabilities from it
    (`attention_bwd_pre.mlir`: rowsum(O dO); `attention_bwd_dkdv[_causal|_gqa].mlir`: dK
    and dV per key block; `attention_bwd_dq[_causal|_gqa].mlir`: dQ per query block;
    deterministic).
    Each kernel is a `TorchKernel`, so `torch.compile` sees custom operators inside the
    function."""
    if scale is None:
        scale = q.shape[-1] ** -0.5
    return _Attention.apply(q, k, v, float(scale), bool(causal))


#: The GEMM of each operand layout, by the tile program in `examples/`: "nt" C = A B^T
#: (both K-major), "nn" C = A B (B stored K x N), "tn" C = A^T B (A stored K x M).
GEMM_KERNELS = {"nt": "gemm", "nn": "gemm_nn", "tn": "gemm_tn"}
_GEMMS: dict[str, TorchKernel] = {}


def _gemm(layout: str) -> TorchKernel:
    """The TorchKernel of the GEMM in `layout` (`GEMM_KERNELS`), made once; each reads
    its tuning table beside its source where there is one."""
    made = _GEMMS.get(layout)
    if made is None:
        path = EXAMPLES / f"{GEMM_KERNELS[layout]}.mlir"
        if not path.exists():
            raise FileNotFoundError(
                f"matmul needs the tile program {path.name} in {EXAMPLES} (the repository's "
                "examples/: install tawac from its source tree)"
            )
        made = _GEMMS[layout] = kernel(path)
    return made


def _check_matrices(what: str, *tensors: torch.Tensor) -> None:
    for t in tensors:
        if t.dim() != 2 or t.dtype != torch.bfloat16:
            raise LaunchError(f"{what}: 2-d bf16 tensors are supported, got {t.dim()}-d {t.dtype}")


class _Matmul(torch.autograd.Function):
    """A B (A: M x K, B: K x N); dA = dC B^T, dB = A^T dC."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _gemm("nn")(a.contiguous(), b.contiguous())

    @staticmethod
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        dc = dc.contiguous().to(a.dtype)
        da = _gemm("nt")(dc, b.contiguous()) if ctx.needs_input_grad[0] else None
        db = _gemm("tn")(a.contiguous(), dc) if ctx.needs_input_grad[1] else None
        return da, db


class _Linear(torch.autograd.Function):
    """X W^T (X: M x K, W: N x K, as `torch.nn.functional.linear`); dX = dY W,
    dW = dY^T X."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return _gemm("nt")(x.contiguous(), w.contiguous())

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        dy = dy.contiguous().to(x.dtype)
        dx = _gemm("nn")(dy, w.contiguous()) if ctx.needs_input_grad[0] else None
        dw = _gemm("tn")(dy, x.contiguous()) if ctx.needs_input_grad[1] else None
        return dx, dw


def matmul(a, b):
    """a @ b for 2-d bf16 tensors (a: M x K, b: K x N), differentiable: the forward is
    `examples/gemm_nn.mlir`, the backward `gemm.mlir` (dA = dC B^T) and `gemm_tn.mlir`
    (dB = A^T dC). Each is a `TorchKernel`, so `torch.compile` sees custom operators."""
    _check_matrices("matmul", a, b)
    return _Matmul.apply(a, b)


def linear(x, w):
    """x @ w^T for 2-d bf16 tensors (x: M x K, w: N x K, as
    `torch.nn.functional.linear` without a bias), differentiable: the forward is
    `examples/gemm.mlir`, the backward `gemm_nn.mlir` (dX = dY W) and `gemm_tn.mlir`
    (dW = dY^T X)."""
    _check_matrices("linear", x, w)
    return _Linear.apply(x, w)
