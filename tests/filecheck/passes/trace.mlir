// trace: an instrumented build stamps each aref acquire/put (producer), get/consumed,
// MMA issue and wait (consumer), main-loop iterations and the epilogue, with event ids
// in the kernel's table (0 and 1: each warp group's sync records, stamped by the
// lowering); sampled (`every` > 1), one stamp at the end of each iteration and the
// epilogue only; without the knob there are none.
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{persistent=false},pipeline,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,trace{slots=1024 ctas=8}' | filecheck %s
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{persistent=false},pipeline,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,trace{slots=1024 ctas=8},convert-to-ptx' --emit ptx | filecheck %s --check-prefix=PTX
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{trace=true},pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,convert-to-ptx' --emit ptx | filecheck %s --check-prefix=OFF
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan,pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,trace' | filecheck %s --check-prefix=ATTN
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan,pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,trace{every=8}' | filecheck %s --check-prefix=SAMPLED
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan,pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,trace{every=8},convert-to-ptx' --emit ptx | filecheck %s --check-prefix=TICKASM
// RUN: not tawac opt %S/../../../examples/gemm.mlir -p 'trace{slots=1000}' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not tawac opt %S/../../../examples/gemm.mlir -p 'trace{every=6}' 2>&1 | filecheck %s --check-prefix=ERR-EVERY

// CHECK: tawac.runtime.trace = {slots = 1024 : i64, ctas = 8 : i64, every = 1 : i64, record_bytes = 16 : i64, warp_groups = 3 : i64, roles = ["producer", "consumer", "consumer"], events = [{id = 0 : i64, name = "warp group", role = "", wg = -1 : i64, op = "sync", span = 0 : i64, loop = -1 : i64, sampled = 0 : i64, edge = "begin"}, {id = 1 : i64, {{.*}} op = "sync", {{.*}} edge = "end"}, {id = 2 : i64, name = "iteration loop0", role = "producer", wg = 0 : i64, op = "iteration", span = 1 : i64, loop = 0 : i64, sampled = 0 : i64, edge = "begin", step = 64 : i64}
// CHECK-SAME: name = "acquire a_b"
// CHECK-SAME: name = "put a_b"
// CHECK-SAME: name = "get a_b"
// CHECK-SAME: name = "mma d"
// CHECK-SAME: name = "mma.wait d"
// CHECK-SAME: name = "consumed a_b"
// CHECK-SAME: name = "epilogue", role = "consumer", wg = 1 : i64, op = "epilogue", span = 9 : i64, loop = -1 : i64, sampled = 0 : i64, edge = "end"}]}
// CHECK:      aref.partition producer warp_groups 1 regs 24
// CHECK:      scf.for
// CHECK-NEXT:   hopper.trace 2
// CHECK:        hopper.trace 4
// CHECK-NEXT:   hopper.mbarrier_wait %empty
// CHECK-NEXT:   hopper.trace 5
// CHECK-NEXT:   hopper.trace 6
// CHECK-NEXT:   hopper.mbarrier_arrive_expect_tx %full
// CHECK-NEXT:   hopper.tma_load
// CHECK-NEXT:   hopper.tma_load
// CHECK-NEXT:   hopper.trace 7
// CHECK-NEXT:   hopper.trace 3
// CHECK-NEXT: }
// CHECK:      aref.partition consumer
// CHECK:      scf.for
// CHECK-NEXT:   hopper.trace 8
// CHECK:        hopper.trace 10
// CHECK-NEXT:   hopper.mbarrier_wait %full
// CHECK-NEXT:   hopper.trace 11
// CHECK:        hopper.trace 12
// CHECK-NEXT:   hopper.wgmma
// CHECK-NEXT:   hopper.trace 13
// CHECK-NEXT:   hopper.trace 14
// CHECK-NEXT:   hopper.wgmma_wait
// CHECK-NEXT:   hopper.trace 15
// CHECK:        hopper.trace 16
// CHECK-NEXT:   hopper.mbarrier_arrive %empty
// CHECK-NEXT:   hopper.trace 17
// CHECK-NEXT:   hopper.trace 9
// CHECK-NEXT:   scf.yield
// CHECK:      hopper.trace 18
// CHECK:      hopper.tma_store
// CHECK-NEXT: hopper.trace 19
// CHECK-NEXT: }

// The buffer is the last parameter; the leader of each warp group stores its records:
// first its sync record ({%globaltimer low, high, %clock, event | smid << 16}), then a
// stamp per boundary ({%clock, iteration, 0, event | smid << 16}).
// PTX:      .param .u64 tawac_trace
// PTX-NEXT: )
// PTX:      setmaxnreg.dec.sync.aligned.u32 24;
// PTX:      mov.u64 [[T:%rd[0-9]+]], %globaltimer;
// PTX:      mov.u32 {{%r[0-9]+}}, %clock;
// PTX:      mov.u32 {{%r[0-9]+}}, %smid;
// PTX:      ld.param.u64 {{%rd[0-9]+}}, [tawac_trace];
// PTX:      @{{%p[0-9]+}} st.global.v4.b32 [{{%rd[0-9]+}}], {{[{]}}{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}{{[}]}};
// PTX:      mov.u32 {{%r[0-9]+}}, %clock;
// PTX-NOT:  %clock64
// PTX:      @{{%p[0-9]+}} st.global.v4.b32

// `trace=true` on `plan` alone adds no pass: the pipeline's `trace` does.
// OFF-NOT: tawac_trace
// OFF-NOT: globaltimer

// Attention: two MMAs per iteration, coarse-pipelined (the steady loop and its prologue).
// ATTN-DAG: name = "mma s"
// ATTN-DAG: name = "get k"
// ATTN-DAG: name = "get v"
// ATTN-DAG: name = "consumed k"
// ATTN-DAG: name = "epilogue"
// ATTN: hopper.trace

// Sampled: one tick per iteration of each innermost loop, after its last op, counted by
// the induction variable (K / 64: `step`); the tile loops are not stamped, the epilogue is.
// SAMPLED: every = 8 : i64
// SAMPLED-SAME: {id = 2 : i64, name = "iteration loop0", role = "producer", wg = 0 : i64, op = "iteration", span = 1 : i64, loop = 0 : i64, sampled = 1 : i64, edge = "at", step = 64 : i64}
// SAMPLED-SAME: {id = 3 : i64, name = "iteration loop0", role = "consumer", wg = 1 : i64, op = "iteration", span = 2 : i64, loop = 0 : i64, sampled = 1 : i64, edge = "at", step = 64 : i64}
// SAMPLED-SAME: name = "epilogue"
// SAMPLED:      aref.partition producer
// SAMPLED:      scf.for %k
// SAMPLED:        hopper.tma_load
// SAMPLED-NEXT:   hopper.tma_load
// SAMPLED-NEXT:   hopper.trace 2
// SAMPLED-NEXT: }
// SAMPLED:      aref.partition consumer
// SAMPLED:        hopper.mbarrier_arrive
// SAMPLED-NEXT:   hopper.trace 3
// SAMPLED-NEXT:   scf.yield
// SAMPLED:      hopper.trace 4

// The tick stores on iterations whose induction variable / 64 is a multiple of 8.
// (the idle bit, bit 0 of the ring position, is or'ed in: an idle warp group stores
// nothing)
// TICKASM:      mov.u32 [[SH:%r[0-9]+]], 6;
// TICKASM-NEXT: shr.b32 [[IT:%r[0-9]+]], {{%r[0-9]+}}, [[SH]];
// TICKASM-NEXT: and.b32 [[IDLE:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
// TICKASM-NEXT: mov.b32 [[MASK:%r[0-9]+]], 7;
// TICKASM-NEXT: and.b32 [[PH:%r[0-9]+]], [[IT]], [[MASK]];
// TICKASM-NEXT: or.b32 [[SKIP:%r[0-9]+]], [[PH]], [[IDLE]];
// TICKASM-NEXT: setp.eq.u32 [[P:%p[0-9]+]], [[SKIP]], {{%r[0-9]+}};
// TICKASM-NEXT: mov.u32 {{%r[0-9]+}}, %clock;
// TICKASM:      @[[P]] st.global.v4.b32 [{{%rd[0-9]+}}], {{[{]}}{{%r[0-9]+}}, [[IT]],

// ERR: trace: slots must be a power of two from 2 to 2^20, got 1000
// ERR-EVERY: trace: every must be a power of two <= 2^16, got 6
