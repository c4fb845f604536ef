// widen: two 64-row programs of x as one 128-row tile. program_id(x) * 64 becomes
// program_id(x) * 128 and every dimension tied to those rows doubles (loads and stores at
// the rows' origin, the row vector, the row mask's iota, the reduction's kept rows, the
// loop-carried accumulator); the B tile and the columns keep their sizes.
// RUN: tawac opt %S/../../data/widen/row_scale_mask.mlir -p widen | filecheck %s
// RUN: tawac opt %S/../../data/widen/row_scale_mask.mlir -p widen{by=1} | filecheck %s --check-prefix=OFF
// RUN: tawac opt %s -p widen --split-input-file | filecheck %s --check-prefix=KEEP
// RUN: not tawac opt %s -p widen{by=2} --split-input-file 2>&1 | filecheck %s --check-prefix=ASKED

// CHECK:      tawac.widen = {programs = 2 : i64, rows = 128 : i64}
// CHECK:      %rows_per_tile = arith.constant 128 : index
// CHECK-NEXT: %m0 = arith.muli %pid_m, %rows_per_tile : index
// CHECK:      %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
// CHECK:      scf.for {{.*}} -> (tensor<128x128xf32>)
// CHECK:      tile.load %a[%m0, %k] : {{.*}} -> tensor<128x64xbf16>
// CHECK:      tile.load %b[%n0, %k] : {{.*}} -> tensor<128x64xbf16>
// CHECK:      tile.load %scale[%m0] : {{.*}} -> tensor<128xf32>
// CHECK:      tile.reduce max %scaled, 1 : tensor<128x128xf32> -> tensor<128xf32>
// CHECK:      tile.iota 0, %m0 : tensor<128x128xi32>
// CHECK:      tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16>

// OFF-NOT: tawac.widen
// OFF:     tile.load %a[%m0, %k] : {{.*}} -> tensor<64x64xbf16>

// The rows' origin also bounds the loop (a causal kernel's key range): kept as written,
// and asking for two programs per tile is a located error naming why.
// KEEP-NOT: tawac.widen
// KEEP:     tensor<64x64xbf16>
// ASKED: widen.mlir:30:1: error: widen: cannot give one tile 2 programs of x: the rows' origin is used by arith.addi
tile.kernel @bounded(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %c: !tile.tensor<?x?xbf16, ["M", "K"]>) {
  %c0 = arith.constant 0 : index
  %bm = arith.constant 64 : index
  %pid_m = tile.program_id x
  %m0 = arith.muli %pid_m, %bm : index
  %end = arith.addi %m0, %bm : index
  %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
  %acc = scf.for %k = %c0 to %end step %bm iter_args(%acc_i = %zero) -> (tensor<64x64xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<64x64xbf16>
    %y = tile.load %a[%k, %c0] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<64x64xbf16>
    %d = tile.dot %x, %y, %acc_i : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  %o = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xbf16>
  tile.store %o, %c[%m0, %c0] : tensor<64x64xbf16> -> !tile.tensor<?x?xbf16, ["M", "K"]>
  tile.return
}
