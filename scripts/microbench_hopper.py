"""Hopper (sm_90a) microbenchmarks for the schedule cost model (`tawac/target/hopper.py`).

    python3 scripts/microbench_hopper.py [--json PATH] [--only GROUP]

Each group below runs in its own subprocess (a kernel fault or a hang costs only its own
rows): small CUDA C kernels with inline PTX, built with `nvcc -cubin` for sm_90a and
launched through CuPy. Latencies are dependent chains timed with clock64() inside the
kernel (cycles per op, best of 4); throughputs count ops per SM over the SM's clock64
window (first block start to last block end on that SM), with CUDA events for wall time.
A failed figure prints `n/a (reason)`. Exit 0 only if fma, mufu, wgmma and dram worked.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REQUIRED = ("fma", "mufu", "wgmma64", "wgmma128", "wgmma256", "dram")
MARK = "@@ROWS "
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"

HEADER = r"""
#include <cuda.h>
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
// Per block: SM id, clock64 at start and end, globaltimer (ns) at start and end.
__device__ __forceinline__ void record(long long* rec, long long c0, long long c1,
                                       unsigned long long g0, unsigned long long g1) {
  unsigned sm; asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  long long* r = rec + 5 * blockIdx.x;
  r[0] = sm; r[1] = c0; r[2] = c1; r[3] = (long long)g0; r[4] = (long long)g1;
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred P;\nWAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n@!P bra WAIT;\n}"
               :: "r"(bar), "r"(parity) : "memory");
}
"""

# One dependent chain per thread (x, y: floats; p: a shared-memory pointer; b: an mbarrier).
LAT_SRC = r"""
extern "C" __global__ void lat(const float* in, float* out, long long* cyc, int iters) {
  __shared__ unsigned ring[1024];
  __shared__ __align__(8) unsigned long long bar;
  const unsigned t = threadIdx.x, b = smem_addr(&bar);
  for (unsigned i = t; i < 1024; i += blockDim.x) ring[i] = smem_addr(&ring[(i + 33) % 1024]);
  if (t == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
  __syncthreads();
  float x = in[t], y = in[32 + t];
  unsigned p = smem_addr(&ring[t]);
  long long best = 1LL << 62;
  for (int rep = 0; rep < 4; ++rep) {
    const long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
      for (int j = 0; j < 32; ++j) { @BODY@ }
    }
    const long long t1 = clock64();
    best = min(best, t1 - t0);
  }
  out[t] = x + (float)p;
  if (t == 0) cyc[0] = best;
}
"""

# Eight independent chains per thread, many threads on every SM.
TPUT_SRC = r"""
extern "C" __global__ void tput(const float* in, float* out, long long* rec, int iters) {
  const unsigned t = threadIdx.x;
  float a[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) a[k] = in[(t + k) & 63];
  const float y = in[64 + (t & 63)];
  __syncthreads();
  const long long c0 = clock64();
  const unsigned long long g0 = gtime();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int k = 0; k < 8; ++k) { @BODY@ }
    }
  }
  __syncthreads();
  const long long c1 = clock64();
  const unsigned long long g1 = gtime();
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 8; ++k) s += a[k];
  out[blockIdx.x * blockDim.x + t] = s;
  if (t == 0) record(rec, c0, c1, g0, g1);
}
"""

# Lane 0 of warp 0 and lane 0 of warp 1 hand two mbarriers back and forth.
PINGPONG_SRC = r"""
extern "C" __global__ void pingpong(long long* cyc, int iters) {
  __shared__ __align__(8) unsigned long long bars[2];
  const unsigned b0 = smem_addr(&bars[0]), b1 = smem_addr(&bars[1]);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b0) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b1) : "memory");
  }
  __syncthreads();
  if (threadIdx.x % 32 != 0) return;
  const bool ping = threadIdx.x == 0;
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
    if (!ping) mbar_wait(b0, i & 1);
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}"
                 :: "r"(ping ? b0 : b1) : "memory");
    if (ping) mbar_wait(b1, i & 1);
  }
  const long long t1 = clock64();
  if (ping) cyc[0] = t1 - t0;
}
"""

# One warp group; A (64x64) and B (Nx64) bf16 K-major in shared memory, 128-byte swizzle.
WGMMA_SRC = r"""
#define MMA(DA, DB) @MMA@
__device__ __forceinline__ unsigned long long desc(unsigned addr) {
  // start >> 4, leading byte offset 16 (unused with swizzle), stride byte offset 1024, 128B
  return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
extern "C" __global__ void __launch_bounds__(128, 1)
wgmma_bench(const unsigned short* src, float* out, long long* rec, long long* lat, int iters) {
  __shared__ __align__(1024) unsigned short tile[(64 + @N@) * 64];
  for (int i = threadIdx.x; i < (64 + @N@) * 64; i += 128) tile[i] = src[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const unsigned long long da = desc(smem_addr(tile)), db = desc(smem_addr(tile + 64 * 64));
  float d[@N@ / 2];
#pragma unroll
  for (int i = 0; i < @N@ / 2; ++i) d[i] = 0.f;
  long long best = 1LL << 62;
  for (int r = 0; r < 8; ++r) {
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    MMA(da, db);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    const long long t1 = clock64();
    best = min(best, t1 - t0);
  }
  __syncthreads();
  const long long c0 = clock64();
  const unsigned long long g0 = gtime();
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < 4; ++k) MMA(da + 2 * k, db + 2 * k);  // next k16 slice: +32 bytes
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
  for (int i = 0; i < @N@ / 2; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
  __syncthreads();
  const long long c1 = clock64();
  const unsigned long long g1 = gtime();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < @N@ / 2; ++i) s += d[i];
  out[blockIdx.x * 128 + threadIdx.x] = s;
  if (threadIdx.x == 0) { record(rec, c0, c1, g0, g1); lat[blockIdx.x] = best; }
}
"""

# One thread: `reps` loads of distinct 16 KiB pieces (cold), then the same again (L2 hits).
TMA_SRC = r"""
__device__ __forceinline__ void copy_lat(const CUtensorMap* tmap, const char* src,
                                         long long* cyc, int reps) {
  __shared__ __align__(1024) unsigned char buf[16384];
  __shared__ __align__(8) unsigned long long bar;
  const unsigned b = smem_addr(&bar), s = smem_addr(buf);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  for (int r = 0; r < 2 * reps; ++r) {
    const int piece = r % reps;
    const long long t0 = clock64();
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16384;"
                 :: "r"(b) : "memory");
    if (tmap)
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
                   ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                   :: "r"(s), "l"(tmap), "r"(0), "r"(piece * 128), "r"(b) : "memory");
    else
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                   " [%0], [%1], 16384, [%2];"
                   :: "r"(s), "l"(src + (size_t)piece * 1048576), "r"(b) : "memory");
    mbar_wait(b, r & 1);
    cyc[r] = clock64() - t0;
  }
}
extern "C" __global__ void tma_lat(const __grid_constant__ CUtensorMap tmap, long long* cyc,
                                   int reps) {
  copy_lat(&tmap, nullptr, cyc, reps);
}
extern "C" __global__ void bulk_lat(const char* src, long long* cyc, int reps) {
  copy_lat(nullptr, src, cyc, reps);
}
"""

LAT_OPS = {
    "fma": 'asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(@V@) : "f"(y));',
    "ex2": 'asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(@V@));',
    # ptxas folds rcp(rcp(x)) to x: an fma between keeps the chain (its latency is taken off)
    "rcp": 'asm volatile("rcp.approx.ftz.f32 %0, %0;\\n\\tfma.rn.f32 %0, %0, %1, %1;"'
    ' : "+f"(@V@) : "f"(y));',
    "shfl": 'asm volatile("shfl.sync.bfly.b32 %0, %0, 1, 0x1f, 0xffffffff;" : "+f"(@V@));',
    "lds": 'asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p) :: "memory");',
    "max": 'asm volatile("max.f32 %0, %0, %1;" : "+f"(@V@) : "f"(y));',
    "mul": 'asm volatile("mul.f32 %0, %0, %1;" : "+f"(@V@) : "f"(y));',
    # one instruction packs two floats; its bits feed the chain back as a float
    "cvt_bf16x2": 'asm volatile("{\\n.reg .b32 r;\\ncvt.rn.bf16x2.f32 r, %0, %1;\\n'
    'mov.b32 %0, r;\\n}" : "+f"(@V@) : "f"(y));',
    "cvt_f16x2": 'asm volatile("{\\n.reg .b32 r;\\ncvt.rn.f16x2.f32 r, %0, %1;\\n'
    'mov.b32 %0, r;\\n}" : "+f"(@V@) : "f"(y));',
    # softmax's mix: one ex2 and four FMA-pipe ops per element (scale, subtract, sum, max)
    "ex2_fma4": 'asm volatile("ex2.approx.ftz.f32 %0, %0;\\n\\tfma.rn.f32 %0, %0, %1, %1;'
    "\\n\\tfma.rn.f32 %0, %0, %1, %1;\\n\\tfma.rn.f32 %0, %0, %1, %1;"
    '\\n\\tfma.rn.f32 %0, %0, %1, %1;" : "+f"(@V@) : "f"(y));',
    "mbar": 'asm volatile("{\\n.reg .b64 st;\\n.reg .pred P;\\n'
    "mbarrier.arrive.shared::cta.b64 st, [%0];\\nW:\\n"
    'mbarrier.try_wait.shared::cta.b64 P, [%0], st;\\n@!P bra W;\\n}" :: "r"(b) : "memory");',
}


def row(unit: str, op: str, value, units: str, how: str) -> dict:
    """One figure of the table; value None means n/a, and `how` then says why."""
    return {"unit": unit, "op": op, "value": value, "units": units, "how": how}


def build(src: str):
    """Compile CUDA C for sm_90a with nvcc into a cubin and load it (CuPy's Module)."""
    import cupy as cp

    with tempfile.TemporaryDirectory() as tmp:
        cu, cubin = Path(tmp) / "k.cu", Path(tmp) / "k.cubin"
        cu.write_text(HEADER + src)
        cmd = [NVCC, "-cubin", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-diag-suppress=177"]
        res = subprocess.run(cmd + [str(cu), "-o", str(cubin)], capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError("nvcc: " + " | ".join(res.stderr.strip().splitlines()[-4:]))
        if res.stderr.strip():  # ptxas warnings (a serialized wgmma, say) matter here
            print(res.stderr.strip(), file=sys.stderr)
        mod = cp.cuda.function.Module()
        mod.load(cubin.read_bytes())
        return mod


def launch(mod, name: str, grid: int, block: int, args: tuple) -> float:
    """Launch a kernel, wait for it (raising on any CUDA error) and return its event ms."""
    import cupy as cp

    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    mod.get_function(name)((grid,), (block,), args)
    end.record()
    end.synchronize()
    cp.cuda.runtime.deviceSynchronize()
    return cp.cuda.get_elapsed_time(start, end)


def per_sm(rec, ops_per_block: float) -> tuple[float, float]:
    """Median over SMs of ops per clock64 cycle (first block start to last block end on
    that SM), and of the SM clock in MHz that clock64 over globaltimer implies."""
    import numpy as np

    rates, mhz = [], []
    for sm in np.unique(rec[:, 0]):
        r = rec[rec[:, 0] == sm]
        cycles, ns = r[:, 2].max() - r[:, 1].min(), r[:, 4].max() - r[:, 3].min()
        rates.append(len(r) * ops_per_block / cycles)
        mhz.append(1e3 * cycles / max(ns, 1))
    return float(np.median(rates)), float(np.median(mhz))


def sm_count() -> int:
    import cupy as cp

    return cp.cuda.Device().attributes["MultiProcessorCount"]


def latency(op: str, threads: int = 32, iters: int = 64) -> float:
    """Cycles per op of one dependent chain of `op` (best of 4 passes in one launch)."""
    import cupy as cp

    mod = build(LAT_SRC.replace("@BODY@", LAT_OPS[op].replace("@V@", "x")))
    inp = cp.random.uniform(0.5, 1.0, 128, dtype=cp.float32)
    out, cyc = cp.zeros(128, cp.float32), cp.zeros(1, cp.int64)
    launch(mod, "lat", 1, threads, (inp, out, cyc, cp.int32(iters)))
    return int(cyc.get()[0]) / (iters * 32)


def throughput(op: str, iters: int) -> tuple[float, float]:
    """Thread-level ops per clock per SM of `op` on all SMs (8 chains a thread, 4 blocks
    of 512 threads an SM), and the SM clock during the run (MHz)."""
    import cupy as cp

    mod = build(TPUT_SRC.replace("@BODY@", LAT_OPS[op].replace("@V@", "a[k]")))
    grid, block = 4 * sm_count(), 512
    inp = cp.random.uniform(0.5, 1.0, 128, dtype=cp.float32)
    out, rec = cp.zeros(grid * block, cp.float32), cp.zeros((grid, 5), cp.int64)
    for _ in range(2):  # the first launch also ramps the clock up
        launch(mod, "tput", grid, block, (inp, out, rec, cp.int32(iters)))
    return per_sm(rec.get(), block * iters * 32)


CHAIN, MANY = "dependent chain, clock64", "8 chains x 2048 threads/SM, per-SM clock64 window"


def bench_fma() -> list[dict]:
    tput, mhz = throughput("fma", 4096)
    return [
        row("fma", "fma.rn.f32 latency", latency("fma"), "cycles", CHAIN),
        row("fma", "fma.rn.f32 throughput", tput, "ops/clk/SM", MANY),
        row("clock", "SM clock during the FMA run", mhz, "MHz", "clock64 / globaltimer"),
    ]


def bench_mufu() -> list[dict]:
    rcp = latency("rcp") - latency("fma")
    return [
        row("mufu", "ex2.approx.ftz.f32 latency", latency("ex2"), "cycles", CHAIN),
        row("mufu", "ex2.approx.ftz.f32 throughput", throughput("ex2", 512)[0], "ops/clk/SM", MANY),
        row("mufu", "rcp.approx.ftz.f32 latency", rcp, "cycles", "rcp+fma chain - fma chain"),
    ]


def bench_shfl() -> list[dict]:
    tput = throughput("shfl", 512)[0]
    return [
        row("shfl", "shfl.sync.bfly.b32 latency", latency("shfl"), "cycles", CHAIN),
        row("shfl", "shfl.sync.bfly.b32 throughput", tput, "lanes/clk/SM", MANY),
    ]


def bench_convert() -> list[dict]:
    """The FMA-pipe-adjacent ops softmax emits besides fma: max, mul, the packing
    conversions, and ex2 mixed with four FMAs (does the MUFU overlap the FMA pipe?)."""
    out = []
    for op, what in (
        ("max", "max.f32"),
        ("mul", "mul.f32"),
        ("cvt_bf16x2", "cvt.rn.bf16x2.f32 (instructions)"),
        ("cvt_f16x2", "cvt.rn.f16x2.f32 (instructions)"),
    ):
        out.append(row("fma", f"{what} throughput", throughput(op, 1024)[0], "ops/clk/SM", MANY))
    out.append(row("fma", "cvt.rn.bf16x2.f32 latency", latency("cvt_bf16x2"), "cycles", CHAIN))
    mix = throughput("ex2_fma4", 512)[0]
    out.append(
        row("mufu", "ex2 + 4 fma per element", mix, "elements/clk/SM", MANY + " (5 ops each)")
    )
    return out


def bench_lds() -> list[dict]:
    lat = latency("lds")
    return [row("smem", "ld.shared.u32 latency", lat, "cycles", "pointer chase, 32 lanes")]


def bench_mbarrier() -> list[dict]:
    import cupy as cp

    same = latency("mbar", threads=1, iters=16)
    mod, iters, cyc = build(PINGPONG_SRC), 4096, cp.zeros(1, cp.int64)
    launch(mod, "pingpong", 1, 64, (cyc, cp.int32(iters)))
    pong, how = int(cyc.get()[0]) / iters, "warp 0 arrives, warp 1 waits and arrives back"
    return [
        row("mbarrier", "arrive + try_wait, one thread", same, "cycles", "dependent loop"),
        row("mbarrier", "ping-pong round trip, 2 warps", pong, "cycles", how),
    ]


def mma_macro(n: int) -> str:
    """The asm statement of one wgmma m64nNk16 bf16 -> f32, both operands from smem."""
    regs = n // 2
    acc = ", ".join(f"%{i}" for i in range(regs))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    ptx = (
        f"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"
        f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 "
        f"{{{acc}}}, %{regs}, %{regs + 1}, p, 1, 1, 0, 0;\\n}}"
    )
    return f'asm volatile("{ptx}" : {outs} : "l"(DA), "l"(DB), "r"(1))'


def bench_wgmma(n: int) -> list[dict]:
    import cupy as cp

    sms, clk = sm_count(), smi("clocks.max.sm").split()[0]
    mod = build(WGMMA_SRC.replace("@MMA@", mma_macro(n)).replace("@N@", str(n)))
    bits = cp.random.standard_normal((64 + n) * 64, dtype=cp.float32).view(cp.uint32)
    src = (bits >> 16).astype(cp.uint16)  # bf16 values: the top half of each f32
    iters = 4096 * 256 // n  # about 2M cycles
    out = cp.zeros(sms * 128, cp.float32)
    rec, lat = cp.zeros((sms, 5), cp.int64), cp.zeros(sms, cp.int64)
    for _ in range(2):
        ms = launch(mod, "wgmma_bench", sms, 128, (src, out, rec, lat, cp.int32(iters)))
    per_clk, mhz = per_sm(rec.get(), iters * 4)
    flops, op = 2 * 64 * n * 16, f"wgmma m64n{n}k16 bf16->f32 SS"
    max_mhz = float(clk) if clk.replace(".", "").isdigit() else mhz
    return [
        row("tensor", f"{op} issue interval", 1 / per_clk, "cycles",
            "1 warp group/SM, back to back, commit every 4, wait_group 0 at the end"),
        row("tensor", f"{op} latency", float(cp.median(lat)), "cycles",
            "fence, wgmma, commit, wait_group 0 (clock64, median over SMs)"),
        row("tensor", f"{op} achieved, {sms} SMs", flops * iters * 4 * sms / ms / 1e9,
            "TFLOP/s", f"CUDA events; clock64/globaltimer read {mhz:.0f} MHz"),
        row("tensor", f"{op} implied dense peak", flops * per_clk * sms * max_mhz / 1e6,
            "TFLOP/s", f"flops/interval x {sms} SMs x {max_mhz:.0f} MHz (max clock); at the "
            f"measured {mhz:.0f} MHz: {flops * per_clk * sms * mhz / 1e6:.0f}"),
    ]  # fmt: skip


def bench_copy(tensor: bool) -> list[dict]:
    """Latency of one 16 KiB bulk copy into shared memory, issue to mbarrier pass: 64
    distinct pieces after an L2 flush (DRAM), then the same 64 again (L2 hits)."""
    import cupy as cp
    import numpy as np

    reps, rows_, cols = 64, 8192, 8192
    mod, data = build(TMA_SRC), cp.full((rows_, cols), 0x3F80, cp.uint16)
    first, name, what = data, "bulk_lat", "cp.async.bulk (non-tensor) 16 KiB"
    if tensor:
        from cuda.bindings import driver as cu

        u64 = lambda *v: [cu.cuuint64_t(x) for x in v]  # noqa: E731
        u32 = lambda *v: [cu.cuuint32_t(x) for x in v]  # noqa: E731
        cu.cuInit(0)
        err, tmap = cu.cuTensorMapEncodeTiled(
            cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, data.data.ptr,
            u64(cols, rows_), u64(cols * 2), u32(64, 128), u32(1, 1),
            cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
            cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )  # fmt: skip
        if err != cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuTensorMapEncodeTiled: {err}")
        first, name = cp.cuda.function.CPointer(tmap.getPtr()), "tma_lat"
        what = "cp.async.bulk.tensor.2d 128x64 bf16 (16 KiB, 128B swizzle)"
    cyc = cp.zeros(2 * reps, cp.int64)
    cp.empty(256 << 20, cp.uint8).fill(1)  # evict `data` from L2
    launch(mod, name, 1, 1, (first, cyc, cp.int32(reps)))
    c, how = cyc.get(), "issue -> mbarrier wait passes, one thread, median of 64"
    return [
        row("tma", f"{what}, DRAM", float(np.median(c[:reps])), "cycles", how),
        row("tma", f"{what}, L2 hit", float(np.median(c[reps:])), "cycles", how),
    ]


def bench_dram() -> list[dict]:
    import torch
    from triton.testing import do_bench

    nbytes = 1 << 30
    src = torch.ones(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), warmup=50, rep=500, return_mode="median")
    how = "torch copy_, bytes read + written, median of triton do_bench"
    return [row("dram", "device-to-device copy, 1 GiB", 2 * nbytes / ms / 1e6, "GB/s", how)]


GROUPS = {
    "fma": bench_fma,
    "mufu": bench_mufu,
    "shfl": bench_shfl,
    "convert": bench_convert,
    "lds": bench_lds,
    "mbarrier": bench_mbarrier,
    "wgmma64": lambda: bench_wgmma(64),
    "wgmma128": lambda: bench_wgmma(128),
    "wgmma256": lambda: bench_wgmma(256),
    "tma": lambda: bench_copy(tensor=True),
    "bulk": lambda: bench_copy(tensor=False),
    "dram": bench_dram,
}


def smi(field: str) -> str:
    """One `nvidia-smi --query-gpu` field of GPU 0, or 'n/a'."""
    cmd = ["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "n/a"
    return res.stdout.strip().splitlines()[0] if res.returncode == 0 and res.stdout else "n/a"


def run_group(name: str, timeout: int) -> tuple[list[dict], bool]:
    """Run one group in a subprocess; on failure one n/a row that says why."""
    cmd = [sys.executable, __file__, "--only", name]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [row(name, "(group)", None, "", f"timed out after {timeout} s")], False
    if res.stderr.strip():
        print(f"[{name}] {res.stderr.strip()[-1500:]}", file=sys.stderr)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith(MARK)]
    if res.returncode != 0 or not lines:
        why = (res.stderr.strip().splitlines() or [f"exit status {res.returncode}"])[-1]
        return [row(name, "(group)", None, "", why[:160])], False
    return json.loads(lines[-1][len(MARK) :]), True


def print_table(info: dict, rows: list[dict]) -> None:
    print(f"device: {info['device']} | SM clock (nvidia-smi): {info['clock_start']} before, "
          f"{info['clock_end']} after, max {info['clock_max']}")  # fmt: skip
    print(f"| {'unit':8} | {'op':66} | {'value':>8} | {'units':12} | how measured |")
    print(f"|{'-' * 10}|{'-' * 68}|{'-' * 10}|{'-' * 14}|{'-' * 14}|")
    for r in rows:
        v = r["value"]
        value = "n/a" if v is None else f"{v:.1f}" if abs(v) >= 100 else f"{v:.3g}"
        how = f"n/a ({r['how']})" if v is None else r["how"]
        print(f"| {r['unit']:8} | {r['op']:66} | {value:>8} | {r['units']:12} | {how} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--only", choices=list(GROUPS), help="run one group in this process")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per group")
    args = ap.parse_args()
    if args.only:
        print(MARK + json.dumps(GROUPS[args.only]()))
        return 0
    info = {"device": smi("name"), "clock_start": smi("clocks.sm")}
    info["clock_max"] = smi("clocks.max.sm")
    rows, ok = [], {}
    for name in GROUPS:
        got, ok[name] = run_group(name, args.timeout)
        rows += got
    info["clock_end"] = smi("clocks.sm")
    print_table(info, rows)
    if args.json:
        args.json.write_text(json.dumps({"info": info, "rows": rows}, indent=2) + "\n")
    failed = [g for g in GROUPS if g in REQUIRED and not ok[g]]
    if failed:
        print(f"required groups failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
