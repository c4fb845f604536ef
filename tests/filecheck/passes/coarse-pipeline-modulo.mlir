// coarse-pipeline's general modulo expansion of hand-written loop schedules.
// RUN: tawac opt --split-input-file %s -p 'warp-specialize,plan,pipeline,coarse-pipeline' | filecheck %s

// Three stages: the MMA at stage 0, the release at stage 1 (one body later), the
// elementwise work at stage 2 (two bodies later). Prologue: bodies 0 and 1; the steady
// loop carries the accumulator and two copies of the MMA result (a shift register); the
// epilogue finishes stages 1-2 and stage 2; fewer than two trips run the original loop.
// Each wait is at the end of its body (nothing in that body reads it), pending 0.
// CHECK-LABEL: tile.kernel @stages3({{.*}}loops = [consumer 0 expanded: [0 aref.get, 1 tile.dot, 3 math.exp2 stage 2, 4 arith.addf stage 2, 2 aref.consumed stage 1, wait 1 pending 0]]
// CHECK:       aref.partition consumer
// CHECK:         %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[NEED:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[SPAN:.*]] = arith.subi %K_1, %c0_1
// CHECK-NEXT:    %[[T:.*]] = arith.ceildivsi %[[SPAN]], %c64_1
// CHECK-NEXT:    %[[HAS:.*]] = arith.cmpi sge, %[[T]], %[[NEED]]
// CHECK-NEXT:    %acc = scf.if %[[HAS]] -> (tensor<128x128xf32>) {
// CHECK:           %[[LAST:.*]] = arith.addi %c0_1, %{{.*}} : index
// prologue body 0: stage 0 of iteration 0
// CHECK:           %[[G0:.*]], %{{.*}} = aref.get %aref0
// CHECK-NEXT:      %[[D0:.*]] = tile.dot %[[G0]]
// CHECK-NEXT:      %[[W0:.*]] = hopper.wgmma_wait %[[D0]] pending 0
// prologue body 1: stage 0 of iteration 1, stage 1 of iteration 0
// CHECK:           %[[G1:.*]], %{{.*}} = aref.get %aref0
// CHECK-NEXT:      %[[D1:.*]] = tile.dot %[[G1]]
// CHECK:           aref.consumed %aref0
// CHECK-NEXT:      %[[W1:.*]] = hopper.wgmma_wait %[[D1]] pending 0
// CHECK-NOT:       math.exp2
// CHECK:           %[[R0:.*]], %[[R1:.*]], %[[R2:.*]] = scf.for %[[IV:.*]] = %{{.*}} to %K_1 step %c64_1 iter_args(%[[ACC:.*]] = %zero, %[[C1:.*]] = %[[W1]], %[[C2:.*]] = %[[W0]])
// CHECK-NEXT:        %[[PREV:.*]] = arith.subi %[[IV]], %c64_1
// CHECK:             %[[G:.*]], %{{.*}} = aref.get %aref0
// CHECK-NEXT:        %[[D:.*]] = tile.dot %[[G]]
// CHECK-NEXT:        %[[E:.*]] = math.exp2 %[[C2]]
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[ACC]], %[[E]]
// CHECK-NEXT:        %[[REL:.*]] = arith.subi %[[PREV]], %c0_1
// CHECK-NEXT:        %[[IT:.*]] = arith.divui %[[REL]], %c64_1
// CHECK-NEXT:        aref.consumed %aref0[%[[IT]]]
// CHECK-NEXT:        %[[W:.*]] = hopper.wgmma_wait %[[D]] pending 0
// CHECK-NEXT:        scf.yield %[[S]], %[[W]], %[[C1]]
// CHECK-NEXT:      }
// epilogue body T: stages 1 and 2; body T+1: stage 2
// CHECK-NEXT:      %[[E1:.*]] = math.exp2 %[[R2]]
// CHECK-NEXT:      %[[S1:.*]] = arith.addf %[[R0]], %[[E1]]
// CHECK-NEXT:      %[[REL1:.*]] = arith.subi %[[LAST]], %c0_1
// CHECK-NEXT:      %[[IT1:.*]] = arith.divui %[[REL1]], %c64_1
// CHECK-NEXT:      aref.consumed %aref0[%[[IT1]]]
// CHECK-NEXT:      %[[E2:.*]] = math.exp2 %[[R1]]
// CHECK-NEXT:      %[[S2:.*]] = arith.addf %[[S1]], %[[E2]]
// CHECK-NEXT:      scf.yield %[[S2]]
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[F:.*]] = scf.for %k_1 = %c0_1 to %K_1 step %c64_1
// CHECK:             hopper.wgmma_wait %{{.*}} pending 0
// CHECK:           scf.yield %[[F]]
tile.kernel @stages3(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 200], arefs = [a_b: depth 3], loops = [consumer 0: [0 aref.get, 1 tile.dot, 3 math.exp2 stage 2, 4 arith.addf stage 2, 2 aref.consumed stage 1]]>} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %zero transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %e = math.exp2 %d : tensor<128x128xf32>
    %s = arith.addf %acc_i, %e : tensor<128x128xf32>
    scf.yield %s : tensor<128x128xf32>
  }
  tile.store %acc, %c[%m0, %n0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

// One stage in another order: the body is rewritten in that order; the wait moves right
// before the first op that reads it (exp2) and the release follows it.
// CHECK-LABEL: tile.kernel @reorder({{.*}}loops = [consumer 0 expanded:
// CHECK:       aref.partition consumer
// CHECK-NOT:     scf.if
// CHECK:         %acc = scf.for %{{.*}} iter_args(%[[ACC:.*]] = %zero)
// CHECK:           %[[G:.*]], %{{.*}} = aref.get %aref0
// CHECK-NEXT:      %[[D:.*]] = tile.dot %[[G]]
// CHECK-NEXT:      %[[W:.*]] = hopper.wgmma_wait %[[D]] pending 0
// CHECK-NEXT:      %[[E:.*]] = math.exp2 %[[W]]
// CHECK-NEXT:      aref.consumed %aref0
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[ACC]], %[[E]]
// CHECK-NEXT:      scf.yield %[[S]]
tile.kernel @reorder(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 200], arefs = [a_b: depth 3], loops = [consumer 0: [0 aref.get, 1 tile.dot, 3 math.exp2, 2 aref.consumed, 4 arith.addf]]>} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %zero transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %e = math.exp2 %d : tensor<128x128xf32>
    %s = arith.addf %acc_i, %e : tensor<128x128xf32>
    scf.yield %s : tensor<128x128xf32>
  }
  tile.store %acc, %c[%m0, %n0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>
  tile.return
}
