// reread-slots: a one-read RMS norm backward at 8192 columns on one consumer warp group.
// Across the row reduction its consumer would hold x, w dy and dy (64 registers a thread
// each) beside the partial sums (64): 256, more than its 256 less the working set. The
// planner marks the three arefs `reread`; at 4096 columns (128 held) and with
// `reread-slots=false` it marks none. The pass computes x, w dy and dy again after the
// reduction: a second get of each slot at the same transfer (`again`: received and
// held, read without a wait), the same casts and product, and each release after its
// second read. lower-aref gives the second gets no mbarrier wait. A schedule that marks an aref whose
// slot nothing reads after a reduction, or an MMA operand's, is a located error. With
// `spread-rows` the row goes over two warp groups instead (`plan_spread`), 128 registers
// held a thread, and nothing is read again; the runs above say it off (its default).
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic spread-rows=false}' | filecheck %s --check-prefix=PLAN
// RUN: tawac opt %s -D BLOCK_N=4096 -p 'warp-specialize,plan{schedule=heuristic spread-rows=false}' | filecheck %s --check-prefix=NARROW
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic spread-rows=false reread-slots=false}' | filecheck %s --check-prefix=OFF
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic spread-rows=false},reread-slots' | filecheck %s --check-prefix=APPLY
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic spread-rows=false reread-slots=false},reread-slots' | filecheck %s --check-prefix=NOOP
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic spread-rows=false},pipeline,persistent,cooperative-consumers,reread-slots,lower-aref' | filecheck %s --check-prefix=LOWER
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic spread-rows=true}' | filecheck %s --check-prefix=SPREAD
// RUN: sed -e 's/attributes {params/attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 256], arefs = [x: depth 4, dy: depth 4, w: depth 4 reread]>, params/' %s > %t.mlir
// RUN: not tawac opt %t.mlir -p 'warp-specialize,plan' 2>&1 | filecheck %s --check-prefix=ERR

// PLAN: arefs = [x: depth 4 reread, dy: depth 4 reread, w: depth 4 reread]
// SPREAD: roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [x: depth 4, dy: depth 4, w: depth 4]
// NARROW: arefs = [x: depth {{[0-9]+}}, dy: depth {{[0-9]+}}, w: depth {{[0-9]+}}]
// NARROW-NOT: reread
// OFF: arefs = [x: depth 4, dy: depth 4, w: depth 4]

// APPLY:      aref.partition consumer
// APPLY:        scf.for
// APPLY:          %[[W:.*]] = aref.get %[[WR:[a-z0-9_]+]][%[[WI:[a-z0-9_]+]]] : !aref.aref<[tensor<8192xbf16>]
// APPLY-NEXT:     %wf = arith.extf %[[W]]
// APPLY-NOT:      aref.consumed
// APPLY:          %[[X:.*]] = aref.get %[[XR:[a-z0-9_]+]][%[[XI:[a-z0-9_]+]]] : !aref.aref<[tensor<1x8192xbf16>]
// APPLY-NEXT:     %xf = arith.extf %[[X]]
// APPLY-NOT:      aref.consumed
// APPLY:          %[[D:.*]] = aref.get %[[DR:[a-z0-9_]+]][%[[DI:[a-z0-9_]+]]] : !aref.aref<[tensor<1x8192xbf16>]
// APPLY-NEXT:     %dyf = arith.extf %[[D]]
// APPLY-NOT:      aref.consumed
// APPLY:          %p = arith.mulf %xf, %wdy
// APPLY-NEXT:     %s = tile.reduce sum %p, 1
// APPLY-NOT:      aref.consumed
// APPLY:          %crb = tile.broadcast
// APPLY-NEXT:     %[[X2:.*]] = aref.get %[[XR]][%[[XI]]] again :
// APPLY-NEXT:     %xf_1 = arith.extf %[[X2]]
// APPLY-NEXT:     aref.consumed %[[XR]][%[[XI]]]
// APPLY-NEXT:     %[[D2:.*]] = aref.get %[[DR]][%[[DI]]] again :
// APPLY-NEXT:     %dyf_1 = arith.extf %[[D2]]
// APPLY-NEXT:     aref.consumed %[[DR]][%[[DI]]]
// APPLY-NEXT:     %[[W2:.*]] = aref.get %[[WR]][%[[WI]]] again :
// APPLY-NEXT:     %wf_1 = arith.extf %[[W2]]
// APPLY-NEXT:     aref.consumed %[[WR]][%[[WI]]]
// APPLY-NEXT:     %wb_1 = tile.broadcast %wf_1, 1
// APPLY-NEXT:     %wdy_1 = arith.mulf %wb_1, %dyf_1
// APPLY-NEXT:     %t1 = arith.mulf %xf_1, %crb
// APPLY-NEXT:     %t2 = arith.subf %wdy_1, %t1
// APPLY:          %xn = arith.mulf %xf_1, %rb
// APPLY-NEXT:     %g = arith.mulf %dyf_1, %xn
// APPLY-NOT:      aref.

// LOWER:      aref.partition consumer
// LOWER-COUNT-3: hopper.mbarrier_wait
// LOWER-NOT:  hopper.mbarrier_wait
// LOWER:      tile.reduce sum
// LOWER-NOT:  hopper.mbarrier_wait
// LOWER:      hopper.load_fragment
// LOWER:      hopper.mbarrier_arrive

// NOOP:      aref.partition consumer
// NOOP-COUNT-3: aref.get
// NOOP-NOT:  aref.get

// ERR: reread-slots.mlir.tmp.mlir:{{[0-9]+}}:{{[0-9]+}}: error: reread-slots: aref 'w' is reread in the schedule, but no consumer block computes a value from its slot that is used after a row reduction

tile.kernel @rmsnorm_bwd_rows(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %dy: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %rstd: !tile.tensor<?xf32, ["M"]>, %dx: !tile.tensor<?x?xbf16, ["M", "N"]>, %dw_part: !tile.tensor<?x?xf32, ["P", "N"]>) attributes {params = {BLOCK_N = 8192}} {
  %c0 = arith.constant 0 : index
  %pid = tile.program_id x
  %M = tile.dim %x[0] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %P = tile.dim %dw_part[0] : !tile.tensor<?x?xf32, ["P", "N"]>
  %nv = arith.constant dense<8.0e+03> : tensor<1xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<1x$BLOCK_Nxf32>
  %acc = scf.for %m = %pid to %M step %P iter_args(%a = %zero) -> (tensor<1x$BLOCK_Nxf32>) {
    %wt = tile.load %w[%c0] : !tile.tensor<?xbf16, ["N"]> -> tensor<$BLOCK_Nxbf16>
    %wf = arith.extf %wt : tensor<$BLOCK_Nxbf16> to tensor<$BLOCK_Nxf32>
    %wb = tile.broadcast %wf, 1 : tensor<$BLOCK_Nxf32> -> tensor<1x$BLOCK_Nxf32>
    %rt = tile.load %rstd[%m] : !tile.tensor<?xf32, ["M"]> -> tensor<1xf32>
    %rb = tile.broadcast %rt, 0 : tensor<1xf32> -> tensor<1x$BLOCK_Nxf32>
    %xt = tile.load %x[%m, %c0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<1x$BLOCK_Nxbf16>
    %dyt = tile.load %dy[%m, %c0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<1x$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<1x$BLOCK_Nxbf16> to tensor<1x$BLOCK_Nxf32>
    %dyf = arith.extf %dyt : tensor<1x$BLOCK_Nxbf16> to tensor<1x$BLOCK_Nxf32>
    %wdy = arith.mulf %wb, %dyf : tensor<1x$BLOCK_Nxf32>
    %p = arith.mulf %xf, %wdy : tensor<1x$BLOCK_Nxf32>
    %s = tile.reduce sum %p, 1 : tensor<1x$BLOCK_Nxf32> -> tensor<1xf32>
    %c = arith.divf %s, %nv : tensor<1xf32>
    %r2 = arith.mulf %rt, %rt : tensor<1xf32>
    %cr = arith.mulf %c, %r2 : tensor<1xf32>
    %crb = tile.broadcast %cr, 0 : tensor<1xf32> -> tensor<1x$BLOCK_Nxf32>
    %t1 = arith.mulf %xf, %crb : tensor<1x$BLOCK_Nxf32>
    %t2 = arith.subf %wdy, %t1 : tensor<1x$BLOCK_Nxf32>
    %dxf = arith.mulf %t2, %rb : tensor<1x$BLOCK_Nxf32>
    %dx16 = arith.truncf %dxf : tensor<1x$BLOCK_Nxf32> to tensor<1x$BLOCK_Nxbf16>
    tile.store %dx16, %dx[%m, %c0] : tensor<1x$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
    %xn = arith.mulf %xf, %rb : tensor<1x$BLOCK_Nxf32>
    %g = arith.mulf %dyf, %xn : tensor<1x$BLOCK_Nxf32>
    %a_new = arith.addf %a, %g : tensor<1x$BLOCK_Nxf32>
    scf.yield %a_new : tensor<1x$BLOCK_Nxf32>
  }
  tile.store %acc, %dw_part[%pid, %c0] : tensor<1x$BLOCK_Nxf32> -> !tile.tensor<?x?xf32, ["P", "N"]>
  tile.return
}
