// coarse-pipeline on the attention kernel: the accumulating MMA O = P V (with the rescale
// of O and the get/release of V's slot) is deferred by one iteration.  The first key
// block's S and softmax run before the loop (guarded by trips >= 1); the loop issues
// S_j, then P_{j-1} V_{j-1} with the carried P and alpha, waits for S_j only (pending 1),
// runs softmax_j under the P V MMA, then waits for it and releases V_{j-1}; the last
// P V runs after the loop.
// RUN: tawac opt %S/../../../examples/attention_d64.mlir -p 'warp-specialize,plan{stages=2 mma-depth=0 persistent=false},pipeline,coarse-pipeline' | filecheck %s
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{stages=2 mma-depth=0 persistent=false},pipeline,coarse-pipeline' | filecheck %s --check-prefix=GEMM

// CHECK:      aref.partition consumer
// CHECK:        %[[TRIPS:.*]] = arith.ceildivsi
// CHECK:        %[[HAS:.*]] = arith.cmpi sge, %[[TRIPS]]
// CHECK:        scf.if %[[HAS]] -> (tensor<192x64xf32>, tensor<192xf32>, tensor<192xf32>) {
// CHECK:          %[[K0:.*]] = aref.get %aref1
// CHECK-NEXT:     %[[S0:.*]] = tile.dot %qt_1, %[[K0]]
// CHECK-NEXT:     hopper.wgmma_wait %[[S0]] pending 0
// CHECK-NEXT:     aref.consumed %aref1
// CHECK:          math.exp2
// CHECK:          %[[P0:.*]] = arith.truncf
// CHECK-NOT:      tile.dot
// CHECK:          scf.for %[[IV:.*]] = {{.*}} iter_args(%[[O:.*]] = %o_init, {{.*}}, %[[ALPHA:.*]] = %alpha, %[[P:.*]] = %[[P0]])
// CHECK-NEXT:       %[[PREV:.*]] = arith.subi %[[IV]], %bn_1
// CHECK:            aref.get %aref1
// CHECK-NEXT:       %[[S:.*]] = tile.dot %qt_1
// CHECK-NEXT:       %[[AB:.*]] = tile.broadcast %[[ALPHA]], 0
// CHECK-NEXT:       %[[OS:.*]] = arith.mulf %[[O]], %[[AB]]
// CHECK-NEXT:       %[[REL:.*]] = arith.subi %[[PREV]]
// CHECK-NEXT:       %[[IT:.*]] = arith.divui %[[REL]]
// CHECK-NEXT:       %[[V:.*]] = aref.get %aref2[%[[IT]]]
// CHECK-NEXT:       %[[PV:.*]] = tile.dot %[[P]], %[[V]], %[[OS]]
// CHECK-NEXT:       %[[SW:.*]] = hopper.wgmma_wait %[[S]] pending 1
// CHECK-NEXT:       aref.consumed %aref1
// CHECK:              tile.select %inside_1, %[[SW]], %neg
// CHECK:            tile.reduce max
// CHECK:            %[[A1:.*]] = math.exp2 %dm_1
// CHECK:            %[[P1:.*]] = arith.truncf
// CHECK-NEXT:       %[[OW:.*]] = hopper.wgmma_wait %[[PV]] pending 0
// CHECK-NEXT:       aref.consumed %aref2[%[[IT]]]
// CHECK-NEXT:       scf.yield %[[OW]], {{.*}}, {{.*}}, %[[A1]], %[[P1]]
// CHECK:          aref.get %aref2
// CHECK-NEXT:     tile.dot
// CHECK-NEXT:     hopper.wgmma_wait {{.*}} pending 0
// CHECK-NEXT:     aref.consumed %aref2
// CHECK-NEXT:     scf.yield
// CHECK:        } else {
// CHECK-NEXT:     scf.yield %o_init, %m_init, %l_init

// GEMM's loop has a single MMA, nothing to overlap it with: unchanged.
// GEMM:      aref.partition consumer
// GEMM-NOT:  scf.if
// GEMM:        scf.for
// GEMM:          tile.dot
// GEMM-NEXT:     hopper.wgmma_wait {{.*}} pending 0
