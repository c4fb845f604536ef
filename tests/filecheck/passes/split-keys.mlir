// split-k of an attention loop (an online softmax: acc, row max m, row sum l): split
// keys, flash-decoding. S programs per query tile along x (x = block * S + split); each
// runs a chunk of the key blocks and stores its partial (O, m, l) where, and as, the
// epilogue stores the output; the last to arrive combines them in split order.
// RUN: tawac opt %S/../../../examples/attention_decode.mlir -p 'group-heads,split-k{splits=4}' | filecheck %s
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'split-k{splits=2}' | filecheck %s --check-prefix=FLAT
// RUN: tawac compile %S/../../../examples/attention_decode.mlir --split-k 4 -o %t.ptx && filecheck %s --check-prefix=PTX < %t.ptx
// RUN: not tawac compile %S/../../../examples/attention_decode.mlir --stream-k 4 -o %t2.ptx 2>&1 | filecheck %s --check-prefix=ERR
// RUN: tawac opt %S/../../../examples/attention_decode.mlir -p 'group-heads,split-k{splits=20}' | filecheck %s --check-prefix=TWO

// The workspace: partial outputs shaped as o with the splits first (whole rows of the
// tile's 128 columns), row maxima and sums, one ticket per query tile; the grid's x
// axis S times the query blocks.
// CHECK:      %tawac_splitk_partials: !tile.tensor<?x?x?x?x128xf32>, %tawac_splitk_row_max: !tile.tensor<?x?x?x?xf32>, %tawac_splitk_row_sum: !tile.tensor<?x?x?x?xf32>, %tawac_splitk_tickets: !tile.tensor<?x?x?xi32>
// CHECK-SAME: tawac.grid = [{cdiv = {arg = "o", dim = 2 : i64}, by = 8 : i64, times = 4 : i64}, {cdiv = {arg = "o", dim = 1 : i64}, by = 8 : i64}, {cdiv = {arg = "o", dim = 0 : i64}, by = 1 : i64}]
// CHECK-SAME: tawac.decomposition = {kind = "split_keys", splits = 4 : i64}
// CHECK:      %splits = arith.constant 4 : index
// CHECK:      %[[X:.*]] = tile.program_id x
// CHECK-NEXT: %block = arith.divui %[[X]], %splits : index
// CHECK-NEXT: %split = arith.remui %[[X]], %splits : index
// CHECK:      %m0 = arith.muli %block, %rows_per_head : index
// CHECK:      %key_lo = arith.addi %c0, %{{.*}} : index
// CHECK:      %key_hi = arith.minsi %{{.*}}, %S : index
// CHECK:      scf.for %n = %key_lo to %key_hi step %bn
// CHECK:      tile.store %acc, %tawac_splitk_partials[%split, %b, %head0, %m0, %c0] stack 8
// CHECK-NEXT: tile.store %m_i, %tawac_splitk_row_max[%split, %b, %head0, %m0] stack 8
// CHECK-NEXT: tile.store %l_i, %tawac_splitk_row_sum[%split, %b, %head0, %m0] stack 8
// CHECK-NEXT: %last = tile.arrive %tawac_splitk_tickets[%{{.*}}, %{{.*}}, %block] count %splits
// CHECK-NEXT: scf.if %last {
// CHECK-NEXT:   %[[O:.*]], %m, %l = tile.split_softmax %tawac_splitk_partials[%{{.*}}, %b, %head0, %m0, %c0], %tawac_splitk_row_max, %tawac_splitk_row_sum count %splits max 4 exp2 stack 8
// CHECK-NEXT:   %l_b = tile.broadcast %l, 0
// CHECK-NEXT:   %out = arith.divf %[[O]], %l_b
// CHECK:        tile.store %out16, %o[%b, %head0, %m0, %c0] stack 8
// CHECK-NEXT: }

// Prefill attention (one program per head, 128-row blocks) splits the same way.
// FLAT:      tawac.decomposition = {kind = "split_keys", splits = 2 : i64}
// FLAT:      tile.split_softmax {{.*}} count %splits max 2 exp2 :

// The combination is a loop over the slices (two at a time), predicated loads from L2.
// PTX:      $L_slices
// PTX:      @%p{{[0-9]+}} ld.global.cg.f32
// PTX:      @%p{{[0-9]+}} ld.global.cg.v2.f32
// PTX:      ex2.approx.ftz.f32
// PTX:      bra.uni $L_slices

// ERR: split-k: stream-K of an attention loop (an online softmax) is not supported; split its keys with --split-k

// From 16 splits the combine has two levels: the last of each group of 2^ceil(log2(S)/2)
// splits combines the group's partials into a slot of the second level, the last of the
// groups combines those (in order: deterministic; about 2 sqrt(S) slices on the
// critical path instead of S).
// TWO:      tawac.decomposition = {kind = "split_keys", splits = 20 : i64, groups = 3 : i64}
// TWO:      tile.store %l_i, %tawac_splitk_row_sum[%split,
// TWO-NEXT: %[[K:.*]] = arith.constant 8 : index
// TWO-NEXT: %[[G:.*]] = arith.constant 3 : index
// TWO-NEXT: %group = arith.divui %split, %[[K]] : index
// TWO-NEXT: %first = arith.muli %group, %[[K]] : index
// TWO-NEXT: %[[LEFT:.*]] = arith.subi %splits, %first : index
// TWO-NEXT: %n{{.*}} = arith.minsi %[[K]], %[[LEFT]] : index
// TWO-NEXT: %last = tile.arrive %tawac_splitk_tickets[%{{.*}}, %{{.*}}, %block, %group] count %n
// TWO-NEXT: scf.if %last {
// TWO-NEXT:   tile.split_softmax %tawac_splitk_partials[%first, {{.*}} count %n{{.*}} max 8 exp2 stack 8
// TWO:        tile.store %{{.*}}, %tawac_splitk_partials2[%group,
// TWO:        %last_1 = tile.arrive %tawac_splitk_tickets2[{{.*}}] count %[[G]]
// TWO-NEXT:   scf.if %last_1 {
// TWO-NEXT:     tile.split_softmax %tawac_splitk_partials2[{{.*}} count %[[G]] max 3 exp2 stack 8
// TWO:          tile.store %out16, %o[
