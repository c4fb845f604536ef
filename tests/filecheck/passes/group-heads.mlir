// group-heads: one program per group of query heads sharing a K/V head (kvh = h / G):
// the group's G heads' query rows stacked as one tile (tile.load/store ... stack G), the
// K/V loads at the group's index, BM / G rows per head.
// RUN: tawac opt %S/../../../examples/attention_decode.mlir -p group-heads | filecheck %s
// RUN: tawac opt %S/../../../examples/attention_decode.mlir -D GROUP=4 -p group-heads | filecheck %s --check-prefix=G4
// RUN: tawac opt %S/../../../examples/attention.mlir -p group-heads | filecheck %s --check-prefix=NONE
// RUN: tawac opt %s -p group-heads --split-input-file | filecheck %s --check-prefix=KEEP
// RUN: tawac opt %S/../../../corpus/attention_gqa_causal.mlir -p group-heads | filecheck %s --check-prefix=CAUSAL
// RUN: tawac opt %S/../../../tests/data/triton/unseen_gqa_causal.ttir -p group-heads | filecheck %s --check-prefix=CAUSAL
// RUN: tawac compile %S/../../../examples/attention_decode.mlir -o %t.ptx && filecheck %s --check-prefix=PTX < %t.ptx
// RUN: tawac compile %S/../../../examples/attention_decode.mlir -o %t.cubin
// RUN: python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(*map(json.dumps, d['params'] + d['checks']), sep='\n')" %t.json | filecheck %s --check-prefix=ABI

// CHECK:      tawac.group_heads = {group = 8 : i64, rows_per_head = 8 : i64}
// CHECK:      %h = tile.program_id y
// CHECK-NEXT: %[[G:.*]] = arith.constant 8 : index
// CHECK-NEXT: %head0 = arith.muli %h, %[[G]] : index
// CHECK:      %rows_per_head = arith.constant 8 : index
// CHECK-NEXT: %m0 = arith.muli %pid_m, %rows_per_head : index
// CHECK-NOT:  arith.divui
// CHECK:      tile.load %q[%b, %head0, %m0, %c0] stack 8 : {{.*}} -> tensor<64x128xbf16>
// CHECK:      tile.load %k[%b, %h, %n, %c0] :
// CHECK:      tile.load %v[%b, %h, %n, %c0] :
// CHECK:      tile.store %out16, %o[%b, %head0, %m0, %c0] stack 8 :

// G4: tawac.group_heads = {group = 4 : i64, rows_per_head = 16 : i64}
// G4: tile.load %q[%b, %head0, %m0, %c0] stack 4

// Attention without grouped heads is left as it is.
// NONE-NOT: stack
// NONE-NOT: tawac.group_heads

// The stacked loads are one 4-d TMA box each: 64 columns x 8 rows x 8 heads x 1 batch.
// PTX: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// ABI: {"kind": "tensor_map", "arg": "q", "box": [64, 8, 8, 1], "swizzle": "128B"}
// ABI: {"kind": "tensor_map", "arg": "o", "box": [64, 8, 8, 1], "swizzle": "128B"}
// The launcher refuses shapes with another ratio of query to K/V heads.
// ABI: {"arg": "q", "dim": 1, "equals": {"arg": "k", "dim": 1, "times": 8}}
// ABI: {"arg": "q", "dim": 1, "equals": {"arg": "v", "dim": 1, "times": 8}}

// A causal grouped-query attention keeps one program per query head: the mask's row
// positions and the key loop's end follow the query block as one head's rows (its own
// `program_id(x) * BM`, as Triton's conversion computes one per use), which stacked heads
// would change; the kernel says why.
// CAUSAL:     tawac.group_heads_kept = "the query block (program id x)'s first row is used by arith.addi,{{.*}}tile.iota,
// CAUSAL-NOT: tawac.group_heads =
// CAUSAL-NOT: ] stack

// A head used other than through h / G and the Q/O coordinates keeps one program per
// head (here: a per-head scalar offset).
// KEEP-LABEL: tile.kernel @other_use
// KEEP-SAME:  tawac.group_heads_kept = "the query head (program id y) is used by arith.addi,
// KEEP-NOT:   stack
tile.kernel @other_use(%q: !tile.tensor<?x?x?x?xbf16>, %k: !tile.tensor<?x?x?x?xbf16>, %o: !tile.tensor<?x?x?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %g = arith.constant 8 : index
  %bm = arith.constant 64 : index
  %pid = tile.program_id x
  %h = tile.program_id y
  %m0 = arith.muli %pid, %bm : index
  %kvh = arith.divui %h, %g : index
  %row = arith.addi %m0, %h : index
  %x = tile.load %q[%c0, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16> -> tensor<64x128xbf16>
  %y = tile.load %k[%c0, %kvh, %row, %c0] : !tile.tensor<?x?x?x?xbf16> -> tensor<64x128xbf16>
  tile.store %y, %o[%c0, %h, %m0, %c0] : tensor<64x128xbf16> -> !tile.tensor<?x?x?x?xbf16>
  tile.return
}

// -----

// A group that does not divide the query block keeps one program per head.
// KEEP-LABEL: tile.kernel @uneven
// KEEP-SAME:  tawac.group_heads_kept = "a group of 3 heads does not divide the query tile's 64 rows"
// KEEP-NOT:   stack
tile.kernel @uneven(%q: !tile.tensor<?x?x?x?xbf16>, %k: !tile.tensor<?x?x?x?xbf16>, %o: !tile.tensor<?x?x?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %g = arith.constant 3 : index
  %bm = arith.constant 64 : index
  %pid = tile.program_id x
  %h = tile.program_id y
  %m0 = arith.muli %pid, %bm : index
  %kvh = arith.divui %h, %g : index
  %x = tile.load %q[%c0, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16> -> tensor<64x128xbf16>
  %y = tile.load %k[%c0, %kvh, %c0, %c0] : !tile.tensor<?x?x?x?xbf16> -> tensor<64x128xbf16>
  tile.store %x, %o[%c0, %h, %m0, %c0] : tensor<64x128xbf16> -> !tile.tensor<?x?x?x?xbf16>
  tile.return
}

// -----

// The query block read again by a second `tile.program_id x` for a row mask: every
// program id of the axis counts, so the kernel keeps one program per head.
// KEEP-LABEL: tile.kernel @second_program_id
// KEEP-SAME:  tawac.group_heads_kept = "the query block (program id x) is used by tile.iota,
// KEEP-NOT:   stack
tile.kernel @second_program_id(%q: !tile.tensor<?x?x?x?xbf16>, %k: !tile.tensor<?x?x?x?xbf16>, %o: !tile.tensor<?x?x?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %g = arith.constant 8 : index
  %bm = arith.constant 64 : index
  %pid = tile.program_id x
  %h = tile.program_id y
  %m0 = arith.muli %pid, %bm : index
  %kvh = arith.divui %h, %g : index
  %x = tile.load %q[%c0, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16> -> tensor<64x128xbf16>
  %y = tile.load %k[%c0, %kvh, %c0, %c0] : !tile.tensor<?x?x?x?xbf16> -> tensor<64x128xbf16>
  %pid2 = tile.program_id x
  %rows = tile.iota 0, %pid2 : tensor<64x128xi32>
  %cols = tile.iota 1, %c0 : tensor<64x128xi32>
  %keep = tile.cmpi sge, %rows, %cols : tensor<64x128xi32>
  %z = tile.select %keep, %x, %y : tensor<64x128xi1>, tensor<64x128xbf16>
  tile.store %z, %o[%c0, %h, %m0, %c0] : tensor<64x128xbf16> -> !tile.tensor<?x?x?x?xbf16>
  tile.return
}
