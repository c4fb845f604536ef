// guard-masks on masks whose operands a user hoisted out of the key loop: the splat of
// the length (`%limit`), the row iota (`%rows`), or the whole compare are defined once
// before the loop, the select directly in the loop body. Only the ops of the select's own
// block that serve only it (the column iota, the compare) move into the `then` region;
// what is defined outside the loop stays there and is read from inside. Running the pass
// twice gives what running it once gives (a select already under the scf.if it made is
// left alone).
// RUN: tawac opt %s -p guard-masks --split-input-file | filecheck %s
// RUN: tawac opt %s -p guard-masks,guard-masks --split-input-file | filecheck %s

// CHECK-LABEL: tile.kernel @hoisted_splat
// CHECK:        %limit = tile.splat %S : index -> tensor<64x128xi32>
// CHECK-NEXT:   scf.for %n = {{.*}} {
// CHECK-NEXT:     %t = tile.load
// CHECK-NEXT:     %[[C128:[0-9]+]] = arith.constant 128 : index
// CHECK-NEXT:     %[[END:[0-9]+]] = arith.addi %n, %[[C128]] : index
// CHECK-NEXT:     %[[RAGGED:[0-9]+]] = arith.cmpi sgt, %[[END]], %S : index
// CHECK-NEXT:     %s = scf.if %[[RAGGED]] -> (tensor<64x128xf32>) {
// CHECK-NEXT:       %cols = tile.iota 1, %n
// CHECK-NEXT:       %inside = tile.cmpi slt, %cols, %limit
// CHECK-NEXT:       %[[SEL:[0-9a-z_]+]] = tile.select %inside, %t, %neg
// CHECK-NEXT:       scf.yield %[[SEL]]
// CHECK-NEXT:     } else {
// CHECK-NEXT:       scf.yield %t
// CHECK-NEXT:     }
// CHECK-NEXT:     tile.reduce max %s, 1
// CHECK-NOT:    scf.if
tile.kernel @hoisted_splat(%x: !tile.tensor<?x?xf32, ["M", "S"]>, %o: !tile.tensor<?xf32, ["M"]>) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %S = tile.dim %x[1] : !tile.tensor<?x?xf32, ["M", "S"]>
  %neg = arith.constant dense<-1.000000e+30> : tensor<64x128xf32>
  %init = arith.constant dense<-1.000000e+30> : tensor<64xf32>
  %limit = tile.splat %S : index -> tensor<64x128xi32>
  %m = scf.for %n = %c0 to %S step %c128 iter_args(%m_j = %init) -> (tensor<64xf32>) {
    %t = tile.load %x[%c0, %n] : !tile.tensor<?x?xf32, ["M", "S"]> -> tensor<64x128xf32>
    %cols = tile.iota 1, %n : tensor<64x128xi32>
    %inside = tile.cmpi slt, %cols, %limit : tensor<64x128xi32>
    %s = tile.select %inside, %t, %neg : tensor<64x128xi1>, tensor<64x128xf32>
    %r = tile.reduce max %s, 1 : tensor<64x128xf32> -> tensor<64xf32>
    %m_new = arith.maximumf %m_j, %r : tensor<64xf32>
    scf.yield %m_new : tensor<64xf32>
  }
  tile.store %m, %o[%c0] : tensor<64xf32> -> !tile.tensor<?xf32, ["M"]>
  tile.return
}

// -----

// CHECK-LABEL: tile.kernel @hoisted_rows
// CHECK:        %rows = tile.iota 0, %m0 : tensor<128x128xi32>
// CHECK-NEXT:   scf.for %n = {{.*}} {
// CHECK-NEXT:     %t = tile.load
// CHECK-NEXT:     %[[C127:[0-9]+]] = arith.constant 127 : index
// CHECK-NEXT:     %[[LAST:[0-9]+]] = arith.addi %n, %[[C127]] : index
// CHECK-NEXT:     %[[DIAG:[0-9]+]] = arith.cmpi slt, %m0, %[[LAST]] : index
// CHECK-NEXT:     %s = scf.if %[[DIAG]] -> (tensor<128x128xf32>) {
// CHECK-NEXT:       %cols = tile.iota 1, %n
// CHECK-NEXT:       %keep = tile.cmpi sge, %rows, %cols
// CHECK-NEXT:       %[[SEL:[0-9a-z_]+]] = tile.select %keep, %t, %neg
// CHECK-NEXT:       scf.yield %[[SEL]]
// CHECK-NEXT:     } else {
// CHECK-NEXT:       scf.yield %t
// CHECK-NEXT:     }
// CHECK-NEXT:     tile.reduce max %s, 1
// CHECK-NOT:    scf.if
tile.kernel @hoisted_rows(%x: !tile.tensor<?x?xf32, ["M", "S"]>, %o: !tile.tensor<?xf32, ["M"]>) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %c128 : index
  %end = arith.addi %m0, %c128 : index
  %neg = arith.constant dense<-1.000000e+30> : tensor<128x128xf32>
  %init = arith.constant dense<-1.000000e+30> : tensor<128xf32>
  %rows = tile.iota 0, %m0 : tensor<128x128xi32>
  %m = scf.for %n = %c0 to %end step %c128 iter_args(%m_j = %init) -> (tensor<128xf32>) {
    %t = tile.load %x[%m0, %n] : !tile.tensor<?x?xf32, ["M", "S"]> -> tensor<128x128xf32>
    %cols = tile.iota 1, %n : tensor<128x128xi32>
    %keep = tile.cmpi sge, %rows, %cols : tensor<128x128xi32>
    %s = tile.select %keep, %t, %neg : tensor<128x128xi1>, tensor<128x128xf32>
    %r = tile.reduce max %s, 1 : tensor<128x128xf32> -> tensor<128xf32>
    %m_new = arith.maximumf %m_j, %r : tensor<128xf32>
    scf.yield %m_new : tensor<128xf32>
  }
  tile.store %m, %o[%m0] : tensor<128xf32> -> !tile.tensor<?xf32, ["M"]>
  tile.return
}

// -----

// A compare of values defined before the loop is loop-invariant: it stays before the
// loop, and so does the guard's scalar condition's input; the select's one user (the
// accumulating add) moves into both branches.
// CHECK-LABEL: tile.kernel @hoisted_compare
// CHECK:        %inside = tile.cmpi slt, %cols, %limit : tensor<64x128xi32>
// CHECK:        scf.for %i = {{.*}} {
// CHECK-NEXT:     %t = tile.load
// CHECK-NEXT:     %[[C128:[0-9]+]] = arith.constant 128 : index
// CHECK-NEXT:     %[[END:[0-9]+]] = arith.addi %c0, %[[C128]] : index
// CHECK-NEXT:     %[[RAGGED:[0-9]+]] = arith.cmpi sgt, %[[END]], %n : index
// CHECK-NEXT:     %[[SUM:[0-9a-z_]+]] = scf.if %[[RAGGED]] -> (tensor<64x128xf32>) {
// CHECK-NEXT:       %[[SEL:[0-9a-z_]+]] = tile.select %inside, %t, %zero
// CHECK-NEXT:       %[[MASKED:[0-9a-z_]+]] = arith.addf %a, %[[SEL]]
// CHECK-NEXT:       scf.yield %[[MASKED]]
// CHECK-NEXT:     } else {
// CHECK-NEXT:       %[[PLAIN:[0-9a-z_]+]] = arith.addf %a, %t
// CHECK-NEXT:       scf.yield %[[PLAIN]]
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.yield %[[SUM]]
// CHECK-NOT:    scf.if
tile.kernel @hoisted_compare(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %o: !tile.tensor<?x?xf32, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %n = tile.dim %x[1] : !tile.tensor<?x?xf32, ["M", "N"]>
  %cols = tile.iota 1, %c0 : tensor<64x128xi32>
  %limit = tile.splat %n : index -> tensor<64x128xi32>
  %inside = tile.cmpi slt, %cols, %limit : tensor<64x128xi32>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x128xf32>
  %acc = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %zero) -> (tensor<64x128xf32>) {
    %t = tile.load %x[%c0, %c0] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<64x128xf32>
    %s = tile.select %inside, %t, %zero : tensor<64x128xi1>, tensor<64x128xf32>
    %a2 = arith.addf %a, %s : tensor<64x128xf32>
    scf.yield %a2 : tensor<64x128xf32>
  }
  tile.store %acc, %o[%c0, %c0] : tensor<64x128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.return
}
