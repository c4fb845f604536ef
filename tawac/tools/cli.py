"""The `tawac` command line: compile, opt, run, explain, tune, cache.

A warm `tawac compile` (the kernel in the compile cache) imports click and the driver's
light modules only: no xDSL, no rich (the consoles are made when they are used).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from tawac.support.diagnostics import CompileError
from tawac.support.files import write_atomic
from tawac.support.options import DEFAULT_TIME_LIMIT, KNOBS, Knob, PipelineOptions, knob

_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F] if c != 0x09}


def printable(text: str) -> str:
    """`text` with control characters (from the input, echoed in a message) escaped."""
    return text.translate(_CONTROL)


def _fail(e: BaseException, code: int = 1) -> None:
    """One diagnostic line on stderr: plain text (no markup, no emoji codes such as
    `:100:` in `f.mlir:100:3`), control characters escaped; bold red on a terminal
    unless NO_COLOR is set (rich is imported for that case only)."""
    text = printable(str(e))
    if os.environ.get("NO_COLOR") is not None or not sys.stderr.isatty():
        print(text, file=sys.stderr, flush=True)
        sys.exit(code)
    from rich.console import Console

    err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)
    err.print(text, markup=False, emoji=False, style="bold red")
    sys.exit(code)


def _launch_error(e: BaseException) -> bool:
    """Whether `e` is the runtime's `LaunchError` (without importing the runtime: a
    process that never loaded it raised none)."""
    arguments = sys.modules.get("tawac.runtime.arguments")
    return arguments is not None and isinstance(e, arguments.LaunchError)


def _quiet_broken_pipe() -> None:
    """The reader of stdout went away (`tawac opt ... | head`): stop quietly, as Unix
    tools do, with the exit status of a process ended by SIGPIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(128 + 13)


def _guard(fn):
    """Run a command, turning every error into one diagnostic line and a non-zero exit."""

    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except CompileError as e:
            _fail(e)
        except BrokenPipeError:
            _quiet_broken_pipe()
        except click.exceptions.Exit:
            raise
        except (click.ClickException, click.Abort):
            raise
        except Exception as e:  # a bug in tawac: still one line, no traceback
            if _launch_error(e):
                _fail(e)
            if os.environ.get("TAWAC_DEBUG"):
                raise
            _fail(
                Exception(
                    f"internal compiler error: {type(e).__name__}: {e} "
                    "(set TAWAC_DEBUG=1 for a traceback)"
                ),
                2,
            )

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _write_both(out: Path, data: bytes | str, sidecar: str) -> None:
    """The kernel and its launch sidecar (the `.json` file's text), both or neither."""
    write_atomic(out, data)
    try:
        write_atomic(out.with_suffix(".json"), sidecar)
    except BaseException:
        out.unlink(missing_ok=True)
        raise


def knob_flag(k: Knob, **overrides):
    """The command-line flag of a pipeline knob: `--name VALUE` (a choice where the knob
    lists its values), `--name/--no-name` for a boolean; the command receives it as the
    keyword argument `k.name`. Ranges are checked by the compiler (one-line errors)."""
    decls = [f"--{k.option}/--no-{k.option}" if k.type is bool else f"--{k.option}", k.name]
    kwargs = {"default": k.default_value(), "show_default": True, "help": k.help}
    if k.choices:
        kwargs["type"] = click.Choice(k.choices)
    elif k.type is not bool:
        kwargs["type"] = k.type
    return click.option(*decls, **{**kwargs, **overrides})


_time_limit = click.option(
    "--time-limit",
    default=DEFAULT_TIME_LIMIT,
    show_default=True,
    type=click.FloatRange(min=0),
    help="seconds the whole compilation may take, ptxas included (0: no limit)",
)


_no_cache = click.option(
    "--no-cache",
    is_flag=True,
    help="compile afresh: neither read nor write the compile cache (as TAWAC_CACHE=0)",
)


_defines = click.option(
    "-D",
    "--define",
    "defines",
    multiple=True,
    metavar="NAME=VALUE",
    help="set a kernel parameter declared in SOURCE (attributes {params = {NAME = default}})",
)


def _params(defines) -> dict[str, int]:
    """The kernel parameters of the `-D` options."""
    if not defines:
        return {}
    from tawac.support.params import parse_defines

    return parse_defines(defines)


def pipeline_options(fn):
    """A flag per pipeline knob (`tawac.support.options.KNOBS`), in table order; commands receive
    them as keyword arguments of compile_file."""
    for k in reversed(KNOBS):
        fn = knob_flag(k)(fn)
    return fn


@click.group()
@click.version_option(package_name="tawac")
def main() -> None:
    """tawac: tile-level kernels to warp-specialized sm_90a PTX.

    \b
    Examples:
      tawac compile examples/gemm.mlir -o gemm.cubin
      tawac opt examples/gemm.mlir -p warp-specialize
      tawac run examples/gemm.mlir --size M=4096,N=4096,K=4096
    """


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="kernel.ptx or kernel.cubin; the launch ABI goes to the .json beside it",
)
@_defines
@pipeline_options
@click.option("--ptxas", default=None, help="ptxas executable (default: PATH, CUDA_HOME, wheel)")
@_time_limit
@_no_cache
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="print ptxas's resource report, and 'cache: hit', 'miss' or 'off' on stderr",
)
@_guard
def compile(source, output, defines, ptxas, time_limit, no_cache, verbose, **pipeline):
    """Compile SOURCE (.mlir) to PTX or a cubin, with a JSON launch sidecar.

    \b
    Examples:
      tawac compile examples/gemm.mlir -o gemm.cubin
      tawac compile examples/attention.mlir -o attention.ptx --no-persistent
      tawac compile examples/gemm.mlir -o gemm.cubin -D BLOCK_N=128 -D BLOCK_K=64
      tawac compile examples/gemm.mlir -o gemm.cubin -v --no-cache
    """
    from tawac.driver import compile_cached

    out = Path(output)
    if out.suffix not in (".ptx", ".cubin"):
        raise CompileError(f"output must end in .ptx or .cubin, got '{output}'")
    if not out.parent.exists():
        raise CompileError(f"output folder {out.parent} does not exist")
    k = compile_cached(
        source,
        params=_params(defines),
        cubin=out.suffix == ".cubin",
        ptxas=ptxas,
        time_limit=time_limit,
        use_cache=not no_cache,
        **pipeline,
    )
    _write_both(out, k.cubin if k.cubin is not None else k.ptx, k.sidecar_text)
    if not verbose:
        return
    click.echo(f"cache: {k.cache}", err=True)
    if k.ptxas_report:
        click.echo(k.ptxas_report.rstrip())


@main.command()
@click.argument("source", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "-p",
    "--passes",
    "pipeline",
    default="",
    help="pass pipeline, e.g. 'warp-specialize,pipeline{stages=3 mma-depth=1}'",
)
@click.option("--print-ir-after-all", is_flag=True, help="print the IR after every pass")
@knob_flag(
    knob("schedule"),
    default=None,
    show_default=False,
    help="the planner of every 'plan' pass in the pipeline (default: as the pass says)",
)
@_time_limit
@click.option(
    "--split-input-file",
    is_flag=True,
    help="process each '// -----' chunk alone; errors go to stdout",
)
@click.option(
    "--emit",
    type=click.Choice(["mlir", "ptx"]),
    default="mlir",
    show_default=True,
    help="print the IR, or the PTX text of the ptx dialect it ends in",
)
@_defines
@_guard
def opt(
    source, pipeline, print_ir_after_all, schedule, time_limit, split_input_file, emit, defines
):
    """Run passes over SOURCE ('-': standard input) and print the IR (for FileCheck
    tests).

    \b
    Examples:
      tawac opt examples/gemm.mlir -p 'warp-specialize,pipeline{stages=3 mma-depth=1}'
      tawac opt kernel.mlir -p warp-specialize --split-input-file | filecheck kernel.mlir
    """
    from tawac.support.timelimit import TimeLimit

    params = _params(defines)
    with TimeLimit(time_limit) as limit:
        _opt(source, pipeline, print_ir_after_all, split_input_file, emit, limit, schedule, params)


def _opt(
    source, pipeline, print_ir_after_all, split_input_file, emit, limit, schedule=None, params=None
):
    from xdsl.printer import Printer

    from tawac.backend_ptx.printer import print_module, ptx_modules
    from tawac.compiler import parse_text, run_pipeline
    from tawac.support.files import decode, read_source

    name = "<stdin>" if source == "-" else source
    text = decode(sys.stdin.buffer.read(), name) if source == "-" else read_source(source)
    chunks = text.split("// -----") if split_input_file else [text]
    failed = False
    line_offset = 0
    for i, chunk in enumerate(chunks):
        if i:
            click.echo("// -----")
        try:
            limit.stage = "parsing"
            module = parse_text("\n" * line_offset + chunk, name, params=params)

            def after(prev, op, nxt):
                if prev is not None and print_ir_after_all:
                    click.echo(f"// -----// IR Dump After {prev.name} //----- //")
                    Printer().print_op(op)
                    click.echo()

            if pipeline:
                run_pipeline(module, pipeline, callback=after, schedule=schedule)
            if emit == "ptx":
                for pm in ptx_modules(module):
                    click.echo(print_module(pm), nl=False)
            else:
                Printer().print_op(module)
                click.echo()
        except CompileError as e:
            if not split_input_file:
                raise
            failed = True
            click.echo(str(e))
        line_offset += chunk.count("\n")
    if failed:
        sys.exit(1)


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@_defines
@pipeline_options
@_time_limit
@click.option("--json", "as_json", is_flag=True, help="print the decisions as JSON")
@click.option(
    "--timeline",
    "timeline",
    type=click.Path(dir_okay=False),
    default=None,
    help="draw the main loop's steady state to this SVG (or .png) file",
)
@click.option(
    "--measured",
    "measured",
    type=click.Path(dir_okay=False),
    default=None,
    help="a Chrome trace of SOURCE as built with these options and --trace-every 1 "
    "(tawac run --trace-out): its measured steady state next to the model's, in the "
    "text, the JSON and the --timeline picture",
)
@click.option(
    "--size",
    "sizes",
    default=None,
    help="dimension sizes by name (M=16,N=4096,K=4096): the decisions for that size, "
    "from SOURCE's tuning table (x.tune.json beside x.mlir, or --table) where it has one",
)
@click.option(
    "--table",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="the tuning table --size picks from (default: the one beside SOURCE)",
)
@_guard
def explain(source, defines, time_limit, as_json, timeline, measured, sizes, table, **pipeline):
    """Show what the compiler decides for SOURCE: warp groups and register budgets,
    arefs (payload, bytes, depth, release lag), the shared-memory map, the grid.

    \b
    Examples:
      tawac explain examples/gemm.mlir
      tawac explain examples/attention.mlir --no-coarse-pipeline --json
      tawac explain examples/attention.mlir --timeline attention.svg
      tawac explain examples/attention.mlir --timeline a.svg --measured a.trace.json
    """
    from rich.console import Console

    from tawac.driver import TimeLimit, parse_source
    from tawac.tools.explain import explain_module, measured_info, render, timeline_svg

    params = _params(defines)
    why = None
    dims = None
    if sizes is not None:
        from tawac.runtime.runner import parse_sizes

        dims = parse_sizes(sizes)
        params, why = _tuned_for(source, table, dims, params, pipeline)
    with TimeLimit(time_limit):
        info = explain_module(
            parse_source(source, params=params),
            PipelineOptions(**pipeline),
            timeline=timeline is not None or measured is not None,
            sizes=dims,
        )
    if why is not None:
        info["decomposition"]["why"] = why
    window = measured_info(info, measured) if measured is not None else None
    if timeline is not None:
        svg = timeline_svg(info, window)
        if timeline.lower().endswith(".png"):
            from tawac.tools.timeline import write_png

            try:
                write_png(svg, timeline)
            except RuntimeError as err:
                raise CompileError(str(err)) from None
        else:
            Path(timeline).write_text(svg)
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    out = Console(highlight=False, emoji=False)
    if not out.is_terminal:
        out = Console(highlight=False, emoji=False, width=120)
    render(info, out)


def _tuned_for(source, table, sizes, params, pipeline) -> tuple[dict, str]:
    """The kernel parameters and pipeline knobs (updated in place) of the tuning-table
    entry for `sizes`, where neither -D nor a flag on the command line set them; and
    where the decisions came from, in words."""
    from click.core import ParameterSource

    from tawac.schedule import tuning
    from tawac.target.hopper import HOPPER

    path = Path(table) if table is not None else tuning.table_path(source)
    if not path.exists():
        return params, f"no tuning table at {path}: the defaults and flags"
    try:
        table = tuning.load_table(path)
        entry = tuning.pick_entry(table, sizes, HOPPER.sm_count)
    except tuning.TuningTableError as e:
        raise CompileError(str(e)) from None
    if entry is None:
        return params, f"{path} has no entry for these dimensions: the defaults and flags"
    ctx = click.get_current_context()
    given = {
        name: pipeline[name]
        for name in pipeline
        if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
    }
    options = tuning.entry_options(entry)
    if tuning.overrides_decomposition(options, given):
        return params, (
            f"the flags choose another decomposition than {path}'s entry for these sizes: "
            "the defaults and flags"
        )
    for name, value in options.items():
        if name not in given:
            pipeline[name] = value
    params = {**entry.get("params", {}), **(params or {})}
    bucket = ",".join(f"{k}={v}" for k, v in entry["bucket"].items())
    if entry.get("sizes"):
        tuned = ",".join(f"{k}={v}" for k, v in entry["sizes"].items())
        bucket = f"{bucket} tuned at {tuned}"
    timed = ""
    if entry.get("time_ms") is not None:
        timed = f", {entry['time_ms'] * 1000:.1f} us on {entry.get('device', 'a GPU')}"
    why = ""
    near = tuning.nearest_entry(table, sizes)
    rows = tuning.program_rows(table)
    if near is not None and near is not entry and rows is not None:
        busy = tuning.busy_sms(near, sizes, rows, HOPPER.sm_count)
        why = (
            f"; chosen over the nearest entry's {near['params']['BLOCK_M']}-row programs, "
            f"which keep {busy} of {HOPPER.sm_count} SMs busy at these sizes"
        )
    elif near is not None and near is not entry:
        dims = tuning.output_dims(table) or ("M", "N")
        ms = tuning.predicted_ms(entry, sizes, dims, HOPPER.sm_count) or 0.0
        tile = "x".join(str(near["params"].get(k, "?")) for k in ("BLOCK_M", "BLOCK_N"))
        why = (
            f"; chosen over the nearest entry's {tile} tiles by the wave model "
            f"(predicted {ms * 1000:.1f} us at these sizes on {HOPPER.sm_count} SMs)"
        )
    return params, f"tuning table {path}, the entry of bucket {bucket}{timed}{why}"


def _require_gpu() -> None:
    from tawac.runtime.runner import require_hopper

    require_hopper("tawac run")


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option(
    "--size", "sizes", required=True, help="dimension sizes by name, e.g. M=4096,N=4096,K=4096"
)
@_defines
@pipeline_options
@_time_limit
@_no_cache
@click.option("--rep-ms", default=100.0, show_default=True, help="milliseconds of timed runs")
@click.option("--no-check", is_flag=True, help="skip the reference comparison")
@click.option(
    "--trace-out",
    type=click.Path(dir_okay=False),
    default=None,
    help="an instrumented build (implies --trace), run once: its Chrome/Perfetto trace JSON "
    "to this path (--trace alone: SOURCE with the suffix .trace.json)",
)
@_guard
def run(source, sizes, defines, time_limit, no_cache, rep_ms, no_check, trace_out, **pipeline):
    """Compile SOURCE, run it on random data on the GPU, compare every output with the
    float32 reference interpreter; exit 1 when an output is off.

    \b
    Examples:
      tawac run examples/gemm.mlir --size M=4096,N=4096,K=4096
      tawac run examples/attention.mlir --size B=2,H=16,S=4096,D=128 --rep-ms 500
      tawac run examples/gemm.mlir --size M=1024,N=1024,K=1024 --trace-out gemm.trace.json
    """
    from tawac.driver import TimeLimit, compile_cached, kernel_op

    params = _params(defines)
    _require_gpu()
    from tawac.runtime.runner import parse_sizes, run_kernel_file

    dims = parse_sizes(sizes)

    def compile_fn(path):
        """The cubin and sidecar through the cache, and the kernel for the reference."""
        with TimeLimit(time_limit):
            k = compile_cached(path, params=params, use_cache=not no_cache, **pipeline)
            return k.cubin, k.sidecar, kernel_op(path, params=params)

    if trace_out is not None:
        pipeline["trace"] = True
    elif pipeline.get("trace"):
        trace_out = str(Path(source).with_suffix(".trace.json"))
    traced = {"trace_out": trace_out} if trace_out is not None else {}
    res = run_kernel_file(
        source, dims, None, compile_fn, check=not no_check, rep_ms=rep_ms, **traced
    )
    for k, v in res.items():
        click.echo(f"{k}: {v}")
    if res["ok"] is False:
        raise CompileError(check_failure(res))


def check_failure(res: dict) -> str:
    """Which outputs differ from the reference, and by how much."""
    tol = res["tol"]
    bad = [f"'{n}' has NaN where the reference has values" for n in res["nan_outputs"]]
    bad += [
        f"'{n}' has values where the reference stores none"
        for n in res.get("unchecked_outputs", [])
    ]
    bad += [
        f"'{n}' relative error {e:.3g} > {tol:g}"
        for n, e in res["errors"].items()
        if n not in res["nan_outputs"] and not e <= tol
    ]
    return "check failed: output " + "; output ".join(bad or ["(none named)"])


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@_defines
@pipeline_options
@_time_limit
@click.option(
    "--size",
    "sizes",
    required=True,
    help="dimension sizes and scalars by name (M=300,N=520,K=200): ragged sizes check more",
)
@click.option(
    "--variants", default=10, show_default=True, help="equivalent spellings to check as well"
)
@click.option("--seed", default=0, show_default=True, help="inputs' and variants' seed")
@_guard
def check(source, defines, time_limit, sizes, variants, seed, **pipeline):
    """Check the passes on SOURCE in the reference interpreter (no GPU): the program after
    each pass `tawac compile` runs with these options, up to `lower-aref` (the tile-level
    rewrites, then the warp-specialized kernel's passes: partitions and arefs
    interpreted), computes what it computed before, on random inputs at --size; so do
    --variants equivalent spellings of it (docs/design/tools.md, "tawac check"). Exit 1
    when a pass changed the meaning or broke the arefs' protocol.

    \b
    Examples:
      tawac check examples/attention_causal.mlir --size B=1,H=2,S=333,D=128
      tawac check examples/gemm.mlir --size M=300,N=520,K=200 --split-k 3
    """
    from tawac.check import NotComparable, ValidationError, Validator, baseline, tile_pipeline
    from tawac.check.validate import PARTITION_STOP
    from tawac.check.variants import variants as spellings
    from tawac.driver import TimeLimit, parse_file, parse_text
    from tawac.runtime.runner import parse_sizes

    dims = parse_sizes(sizes)
    passes = tile_pipeline(PARTITION_STOP, **pipeline)
    with TimeLimit(time_limit):
        module = parse_file(source, params=_params(defines))
        try:
            base = baseline(module, dims, seed=seed)
        except NotComparable as e:
            raise click.BadParameter(f"{e}", param_hint="'--size'") from None
        try:
            done = Validator(module.clone(), base, source).apply(passes)
            for v in done:
                # the passes run in order and the last one's result is interpreted (each
                # alone only where it differs): a pass before it agrees through it
                what = "unchanged"
                if v.changed:
                    what = "changed (checked with the passes after it)"
                if v.outputs:
                    what = f"agrees (max error {v.max_error:.2g})"
                click.echo(f"{v.pass_name}: {what}")
            for i, (m, applied) in enumerate(spellings(module, variants, seed)):
                name = f"{source} variant {i} ({', '.join(applied)})"
                try:
                    spelled = parse_text(str(m), name)
                    Validator(spelled, base, name).apply(passes)
                except CompileError as e:
                    click.echo(f"variant {i} ({', '.join(applied)}): refused: {e}")
                    continue
                click.echo(f"variant {i} ({', '.join(applied)}): agrees")
        except ValidationError as e:
            raise CompileError(f"check failed: {e}") from None


@main.group()
def cache() -> None:
    """The compile cache on disk: compiled kernels and solved schedules, in
    $TAWAC_CACHE_DIR (else $XDG_CACHE_HOME/tawac, else ~/.cache/tawac); TAWAC_CACHE=0
    turns the kernel cache off.

    \b
    Examples:
      tawac cache info
      tawac cache clear
    """


@cache.command("info")
@_guard
def cache_info_command() -> None:
    """Print where the cache is and how many entries and bytes it holds."""
    from tawac.support.cache import cache_info, format_bytes

    info = cache_info()
    click.echo(f"root: {info['root']}")
    for name in ("kernels", "solver"):
        part = info[name]
        click.echo(f"{name}: {part['entries']} entries, {format_bytes(part['bytes'])}")
    click.echo(f"kernel cache: {'on' if info['enabled'] else 'off (TAWAC_CACHE=0)'}")


@cache.command("clear")
@_guard
def cache_clear_command() -> None:
    """Remove every cached kernel and schedule."""
    from tawac.support.cache import cache_root, clear_cache, format_bytes

    files, freed = clear_cache()
    click.echo(f"removed {files} files ({format_bytes(freed)}) from {cache_root()}")


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option(
    "--size",
    "sizes",
    multiple=True,
    help="dimension sizes by name, e.g. M=4096,N=4096,K=4096 (repeat for several sizes)",
)
@click.option(
    "--space",
    multiple=True,
    metavar="NAME=V1,V2,...",
    help="values to try of a pipeline option (stages, mma-depth, ...) or a kernel "
    "parameter (BLOCK_N, ...); repeat: the candidates are the product",
)
@click.option(
    "-j", "--jobs", type=click.IntRange(min=1), default=None, help="compile workers [CPUs]"
)
@click.option(
    "--table",
    type=click.Path(dir_okay=False),
    default=None,
    help="the tuning table to update [SOURCE with .mlir -> .tune.json]",
)
@click.option(
    "--rep-ms",
    default=100.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="milliseconds of timed runs per candidate and size",
)
@knob_flag(
    knob("schedule"),
    default=None,
    show_default=False,
    help="the planner of every candidate (default: $TAWAC_SCHEDULE, else auto)",
)
@click.option(
    "--compile-only", is_flag=True, help="compile the candidates (fills the cache); no GPU"
)
@click.option(
    "--l2",
    type=click.Choice(["dirty", "clean"]),
    default="dirty",
    show_default=True,
    help="how the L2 is emptied before each timed call: dirty (triton's do_bench, a 256 MB "
    "memset: the call also writes back the dirty lines it evicts) or clean (a 256 MB read: "
    "the call's own traffic only, as in a decode step); clean is recorded in the table",
)
@click.option(
    "--devices",
    type=click.IntRange(min=1),
    default=None,
    help="GPUs timing sizes at once, one worker process each [every local GPU]",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=3,  # tawac.tools.tune.ROUNDS (imported when the command runs)
    show_default=True,
    help="round-robin rounds per size: a candidate replaces the default only when faster "
    "in every round",
)
@_no_cache
@_defines
@_guard
def tune(
    source,
    sizes,
    space,
    jobs,
    table,
    rep_ms,
    schedule,
    compile_only,
    l2,
    devices,
    rounds,
    no_cache,
    defines,
):
    """Find the fastest kernel parameters and pipeline options of SOURCE at each size:
    compile every candidate in parallel, check and time each on the GPU, write the best
    per size bucket to the tuning table (a candidate only when it beats the default
    configuration in every round-robin round).

    \b
    Examples:
      tawac tune examples/gemm.mlir --size M=4096,N=4096,K=4096 --space stages=3,4
      tawac tune examples/attention.mlir --size B=4,H=16,S=4096,D=128 --space BLOCK_N=64,128
      tawac tune examples/gemm.mlir --space stages=2,3,4 --compile-only
    """
    from tawac.tools.tune import tune_command

    tune_command(
        source,
        sizes,
        space,
        jobs=jobs,
        table=table,
        rep_ms=rep_ms,
        compile_only=compile_only,
        schedule=schedule,
        defines=defines,
        use_cache=not no_cache,
        devices=devices,
        l2=l2,
        rounds=rounds,
    )


@main.command()
@click.option(
    "--from",
    "bench",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="fit to the traced loops of a `benchmarks/bench_corpus.py --json` run "
    "(repeatable) instead of measuring here",
)
@click.option(
    "--corpus",
    default="corpus/corpus.json",
    show_default=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="the corpus manifest",
)
@click.option("--planners", default="heuristic,solver", show_default=True)
@click.option("--only", default="", help="comma-separated program names")
@click.option("--trace-every", default=8, show_default=True, help="sampled every N-th iteration")
@click.option("--rounds", default=4, show_default=True, help="coordinate-descent rounds")
@click.option(
    "-o",
    "--output",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="write the calibration file here (tawac/target/calibration/sm_90a.json ships)",
)
@_guard
def calibrate(bench, corpus, planners, only, trace_every, rounds, output):
    """Fit the cost model to the GPU: measure each corpus program's consumer main loops
    in a sampled instrumented build, under each planner (one worker process per local
    GPU), fit the model's figures to them, print the model's error before and after and
    write the calibration file every planner reads.

    \b
    Examples:
      tawac calibrate -o h100.json
      tawac calibrate --from bench.json -o tawac/target/calibration/sm_90a.json
    """
    from tawac.tools.calibrate import calibrate_command

    calibrate_command(
        corpus,
        list(bench),
        tuple(planners.split(",")),
        only=[n for n in only.split(",") if n],
        trace_every=trace_every,
        rounds=rounds,
        output=output,
    )


if __name__ == "__main__":
    main()
