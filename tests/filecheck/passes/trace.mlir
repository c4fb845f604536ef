// trace: an instrumented build stamps each aref acquire/put (producer), get/consumed,
// MMA issue and wait (consumer), main-loop iterations and the epilogue, with event ids
// in the kernel's table; without the knob there are none.
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{persistent=false},pipeline,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,trace{slots=1024 ctas=8}' | filecheck %s
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{persistent=false},pipeline,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,trace{slots=1024 ctas=8},convert-to-ptx' --emit ptx | filecheck %s --check-prefix=PTX
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{trace=true},pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,convert-to-ptx' --emit ptx | filecheck %s --check-prefix=OFF
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan,pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,trace' | filecheck %s --check-prefix=ATTN
// RUN: not tawac opt %S/../../../examples/gemm.mlir -p 'trace{slots=1000}' 2>&1 | filecheck %s --check-prefix=ERR

// CHECK: tawac.trace = {slots = 1024 : i64, ctas = 8 : i64, record_bytes = 16 : i64, warp_groups = 3 : i64, roles = ["producer", "consumer", "consumer"], events = [{id = 0 : i64, name = "iteration loop0", role = "producer", op = "iteration", span = 0 : i64, loop = 0 : i64, edge = "begin"}
// CHECK-SAME: name = "acquire a_b"
// CHECK-SAME: name = "put a_b"
// CHECK-SAME: name = "get a_b"
// CHECK-SAME: name = "mma d"
// CHECK-SAME: name = "mma.wait d"
// CHECK-SAME: name = "consumed a_b"
// CHECK-SAME: name = "epilogue", role = "consumer", op = "epilogue", span = 8 : i64, loop = -1 : i64, edge = "end"}]}
// CHECK:      aref.partition producer
// CHECK:      scf.for
// CHECK-NEXT:   hopper.trace 0
// CHECK:        hopper.trace 2
// CHECK-NEXT:   hopper.mbarrier_wait %empty
// CHECK-NEXT:   hopper.trace 3
// CHECK-NEXT:   hopper.trace 4
// CHECK-NEXT:   hopper.mbarrier_arrive_expect_tx %full
// CHECK-NEXT:   hopper.tma_load
// CHECK-NEXT:   hopper.tma_load
// CHECK-NEXT:   hopper.trace 5
// CHECK-NEXT:   hopper.trace 1
// CHECK-NEXT: }
// CHECK:      aref.partition consumer
// CHECK:      scf.for
// CHECK-NEXT:   hopper.trace 6
// CHECK:        hopper.trace 8
// CHECK-NEXT:   hopper.mbarrier_wait %full
// CHECK-NEXT:   hopper.trace 9
// CHECK:        hopper.trace 10
// CHECK-NEXT:   hopper.wgmma
// CHECK-NEXT:   hopper.trace 11
// CHECK-NEXT:   hopper.trace 12
// CHECK-NEXT:   hopper.wgmma_wait
// CHECK-NEXT:   hopper.trace 13
// CHECK:        hopper.trace 14
// CHECK-NEXT:   hopper.mbarrier_arrive %empty
// CHECK-NEXT:   hopper.trace 15
// CHECK-NEXT:   hopper.trace 7
// CHECK-NEXT:   scf.yield
// CHECK:      hopper.trace 16
// CHECK:      hopper.tma_store
// CHECK-NEXT: hopper.trace 17
// CHECK-NEXT: }

// The buffer is the last parameter; the leader of each warp group stores its records.
// PTX:      .param .u64 tawac_trace
// PTX-NEXT: )
// PTX:      ld.param.u64 [[BUF:%rd[0-9]+]], [tawac_trace];
// PTX:      mov.u32 {{%r[0-9]+}}, %smid;
// PTX:      mov.u64 {{%rd[0-9]+}}, %globaltimer;
// PTX-NEXT: mov.u64 {{%rd[0-9]+}}, %clock64;
// PTX:      @{{%p[0-9]+}} st.global.v2.b64 [{{%rd[0-9]+}}], {{[{]}}{{%rd[0-9]+}}, {{%rd[0-9]+}}{{[}]}};

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

// ERR: trace: slots must be a power of two <= 2^20, got 1000
