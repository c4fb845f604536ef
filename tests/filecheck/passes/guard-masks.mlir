// guard-masks: the masks a Triton attention applies to every key block (the causal
// diagonal `rows >= cols`, joined with `&` to the length mask `cols < seqlen`) are
// computed under an scf.if of the iterations where some element is false: the causal
// one where the block's first row is before its last key (m0 < n + 127), the length
// one where the block runs past the end (n + 128 > seqlen); the other iterations pass the
// scores through. The compare, iota and splat ops move into the guarded region. A mask
// already under an scf.if (examples/attention.mlir) is left alone. The tutorial's
// `qk * scale + tl.where(mask, 0, -1.0e6)`: the add, the select's one user, moves into
// both branches (the `else` adds the select's true value), so the `if` yields one tile.
// RUN: tawac opt %S/../../data/triton/unseen_attention_causal.ttir -p guard-masks | filecheck %s
// RUN: tawac opt %S/../../../examples/attention.mlir -p guard-masks | filecheck %s --check-prefix=EXAMPLE
// RUN: tawac opt %S/../../../examples/triton/attention_causal.ttir -p guard-masks | filecheck %s --check-prefix=SINK

// CHECK:      %[[M0:[0-9]+]] = arith.muli %{{[0-9]+}}, %{{[0-9]+}} : index
// CHECK:      %[[DIM:[0-9]+]] = tile.dim %Q[2]
// CHECK-NEXT: %[[LEN:[0-9]+]] = arith.muli %{{[0-9]+}}, %[[DIM]] : index
// CHECK:      scf.for %[[N:[0-9]+]] = {{.*}} {
// CHECK:        %[[QK:.*]] = arith.mulf
// CHECK-NEXT:   %[[COLS:[0-9]+]] = tile.iota 1, %[[N]]
// CHECK-NEXT:   %[[C127:[0-9]+]] = arith.constant 127 : index
// CHECK-NEXT:   %[[LAST:[0-9]+]] = arith.addi %[[N]], %[[C127]] : index
// CHECK-NEXT:   %[[DIAG:[0-9]+]] = arith.cmpi slt, %[[M0]], %[[LAST]] : index
// CHECK-NEXT:   %[[CAUSAL:[0-9]+]] = scf.if %[[DIAG]] -> (tensor<128x128xf32>) {
// CHECK-NEXT:     tile.iota 0, %[[M0]]
// CHECK-NEXT:     tile.cmpi sge, %{{[0-9]+}}, %[[COLS]]
// CHECK-NEXT:     %[[SEL:[0-9]+]] = tile.select {{.*}}, %[[QK]], %cst_1
// CHECK-NEXT:     scf.yield %[[SEL]]
// CHECK-NEXT:   } else {
// CHECK-NEXT:     scf.yield %[[QK]]
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[C128:[0-9]+]] = arith.constant 128 : index
// CHECK-NEXT:   %[[END:[0-9]+]] = arith.addi %[[N]], %[[C128]] : index
// CHECK-NEXT:   %[[RAGGED:[0-9]+]] = arith.cmpi sgt, %[[END]], %[[LEN]] : index
// CHECK-NEXT:   %[[MASKED:[0-9]+]] = scf.if %[[RAGGED]] -> (tensor<128x128xf32>) {
// CHECK-NEXT:     tile.splat %[[LEN]]
// CHECK-NEXT:     tile.cmpi slt, %[[COLS]]
// CHECK-NEXT:     tile.select {{.*}}, %[[CAUSAL]], %cst_1
// CHECK:        } else {
// CHECK-NEXT:     scf.yield %[[CAUSAL]]
// CHECK-NEXT:   }
// CHECK-NEXT:   tile.reduce max %[[MASKED]], 1

// EXAMPLE:      %ragged = arith.cmpi sgt, %n_end, %S : index
// EXAMPLE-NEXT: %s2 = scf.if %ragged -> (tensor<128x128xf32>) {
// EXAMPLE-NEXT:   %cols = tile.iota 1, %n
// EXAMPLE-NEXT:   %inside = tile.cmpi slt, %cols, %limit
// EXAMPLE-NEXT:   %masked = tile.select %inside, %s, %neg
// EXAMPLE-NOT:  scf.if
// EXAMPLE:      tile.reduce max %s2

// SINK:      %[[DIAG:[0-9]+]] = arith.cmpi slt
// SINK-NEXT: %[[SUM:[a-z0-9_]+]] = scf.if %[[DIAG]] -> (tensor<128x128xf32>) {
// SINK-NEXT:   tile.iota 0
// SINK-NEXT:   tile.iota 1
// SINK-NEXT:   tile.cmpi sge
// SINK-NEXT:   %[[SEL:[0-9]+]] = tile.select {{.*}}, %[[ZERO:cst[_0-9]*]], %cst
// SINK-NEXT:   %[[MASKED:[a-z0-9_]+]] = arith.addf %[[QK:[a-z0-9_]+]], %[[SEL]]
// SINK-NEXT:   scf.yield %[[MASKED]]
// SINK-NEXT: } else {
// SINK-NEXT:   %[[PLAIN:[a-z0-9_]+]] = arith.addf %[[QK]], %[[ZERO]]
// SINK-NEXT:   scf.yield %[[PLAIN]]
// SINK-NEXT: }
// SINK-NEXT: tile.reduce max %[[SUM]], 1
