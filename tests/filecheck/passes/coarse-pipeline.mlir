// coarse-pipeline on the attention kernel: the first key block's S = Q K^T is issued
// before the loop (guarded by trips >= 1), the loop issues S_{j+1} right after taking its
// own slot and before the softmax of S_j, waits for it at the end and carries it; the
// last iteration is peeled without a next MMA.
// RUN: tawac opt %S/../../../examples/attention_d64.mlir -p 'warp-specialize,pipeline{stages=2 mma-depth=0},coarse-pipeline' | filecheck %s

// CHECK:      aref.partition consumer
// CHECK:        %[[TRIPS:.*]] = arith.ceildivsi
// CHECK:        %[[HAS:.*]] = arith.cmpi sge, %[[TRIPS]]
// CHECK:        scf.if %[[HAS]] -> (tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>) {
// CHECK:          aref.get
// CHECK-NEXT:     %[[S0:.*]] = tile.dot
// CHECK-NEXT:     %[[W0:.*]] = hopper.wgmma_wait %[[S0]] pending 0
// CHECK:          scf.for {{.*}} iter_args({{.*}}, %[[SCUR:.*]] = %[[W0]])
// CHECK:            aref.get
// CHECK:            aref.get
// CHECK-NEXT:       %[[SN:.*]] = tile.dot
// CHECK:              tile.select %inside, %[[SCUR]], %neg
// CHECK:            tile.reduce max
// CHECK:            tile.dot %p16
// CHECK:            aref.consumed
// CHECK-NEXT:       %[[WN:.*]] = hopper.wgmma_wait %[[SN]] pending 0
// CHECK-NEXT:       scf.yield {{.*}}, %[[WN]]
// CHECK:          tile.reduce max
// CHECK:          tile.dot %p16
// CHECK:          scf.yield
// CHECK:        } else {
// CHECK-NEXT:     scf.yield %o_init, %m_init, %l_init
