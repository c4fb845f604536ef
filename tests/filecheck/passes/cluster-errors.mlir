// Clusters are planned only where the paired CTAs run their transfers in lockstep and
// share an operand they can split; anything else is one located error, not a miscompile.
// RUN: not tawac opt %S/../../../examples/attention_causal.mlir -p 'warp-specialize,plan{cluster=2x1}' 2>&1 | filecheck %s --check-prefix=CAUSAL
// RUN: not tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{cluster=1x2}' 2>&1 | filecheck %s --check-prefix=HEADS
// RUN: not tawac opt %s -p 'warp-specialize,plan{cluster=3x1}' 2>&1 | filecheck %s --check-prefix=SHAPE
// RUN: not tawac opt --split-input-file %s -p 'warp-specialize,plan{cluster=2x1}' 2>&1 | filecheck %s

// Causal attention's key loop ends at the diagonal block (its bound follows program id
// x): the paired query blocks would run different numbers of key steps.
// CAUSAL: attention_causal.mlir:28:22: error: plan: cluster 2x1 (CTAs of program ids x = 2i, 2i+1 share an operand) cannot be used: the loop's bounds depend on program id x, so the paired CTAs would run different numbers of steps
// 1x2 pairs heads: K and V follow program id y (and so does Q).
// HEADS: attention.mlir:{{[0-9]+}}:22: error: plan: cluster 1x2 (CTAs of program ids y = 2i, 2i+1 share an operand) cannot be used: every operand load depends on program id y: nothing to share
// SHAPE: error: plan: cluster must be one of 1x1, 2x1, 1x2, got '3x1'

// A triangular K loop (its bound follows program id x): the paired CTAs would run
// different numbers of steps.
tile.kernel @triangle(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 64 : index
  %bm = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bm : index
  %ub = arith.addi %m0, %bm : index
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %ub step %bk iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
// CHECK: cluster-errors.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: plan: cluster 2x1 (CTAs of program ids x = 2i, 2i+1 share an operand) cannot be used: the loop's bounds depend on program id x, so the paired CTAs would run different numbers of steps
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}

// -----

// Both operands follow program id x: nothing to share.
tile.kernel @both(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 64 : index
  %bm = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bm : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
// CHECK: cluster-errors.mlir:{{[0-9]+}}:{{[0-9]+}}: error: plan: cluster 2x1 {{.*}}: every operand load depends on program id x: nothing to share
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}

// -----

// A 24-row B tile does not split into two bands of whole 8-row swizzle patterns.
tile.kernel @narrow(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 64 : index
  %bm = arith.constant 128 : index
  %bn = arith.constant 24 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x24xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<128x24xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<24x64xbf16>
// CHECK: cluster-errors.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: plan: cluster 2x1 {{.*}}: the shared operand cannot be split between the CTAs: 24 rows do not split into 2 bands of a multiple of 8 rows (a band starts on a 1024-byte swizzle pattern)
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<24x64xbf16> -> tensor<128x24xf32>
    scf.yield %d : tensor<128x24xf32>
  }
  %o = arith.truncf %acc : tensor<128x24xf32> to tensor<128x24xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x24xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
