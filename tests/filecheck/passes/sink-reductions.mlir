// sink-reductions: a reduction combined into a loop's accumulator on every iteration
// becomes an elementwise accumulation in a tile, reduced once after the loop. A sum only
// where its add says fastmath<reassoc> (or fast); a max or min always (the same set in
// any order). The kept ones are recorded on the kernel with the reason.
// RUN: tawac opt %s -p sink-reductions | filecheck %s
// RUN: tawac opt %s -p sink-reductions,sink-reductions | filecheck %s

// A sum with reassoc, from the identity: the loop carries the 8x256 tile; the reduction
// after it is the result (no combination with the initial zero).
// CHECK-LABEL: tile.kernel @sum_reassoc
// CHECK-SAME:    tawac.sink_reductions = {sunk = 1 : i64, kept = []}
// CHECK:         %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<8x256xf32>
// CHECK-NEXT:    %[[L:.*]] = scf.for %{{.*}} iter_args(%[[T:.*]] = %[[Z]]) -> (tensor<8x256xf32>) {
// CHECK:           %[[SQ:.*]] = arith.mulf
// CHECK-NEXT:      %[[N:.*]] = arith.addf %[[T]], %[[SQ]] fastmath<reassoc> : tensor<8x256xf32>
// CHECK-NEXT:      scf.yield %[[N]] : tensor<8x256xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R:.*]] = tile.reduce sum %[[L]], 1 : tensor<8x256xf32> -> tensor<8xf32>
// CHECK-NEXT:    tile.store %[[R]]
tile.kernel @sum_reassoc(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %o: !tile.tensor<?xf32, ["M"]>) {
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  %pid = tile.program_id x
  %c8 = arith.constant 8 : index
  %m0 = arith.muli %pid, %c8 : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xf32, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<8xf32>
  %s = scf.for %n = %c0 to %N step %c256 iter_args(%acc = %zero) -> (tensor<8xf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<8x256xf32>
    %sq = arith.mulf %xt, %xt : tensor<8x256xf32>
    %r = tile.reduce sum %sq, 1 : tensor<8x256xf32> -> tensor<8xf32>
    %acc_new = arith.addf %acc, %r fastmath<reassoc> : tensor<8xf32>
    scf.yield %acc_new : tensor<8xf32>
  }
  tile.store %s, %o[%m0] : tensor<8xf32> -> !tile.tensor<?xf32, ["M"]>
  tile.return
}

// The same sum without reassoc keeps its order: unchanged, the reason recorded.
// CHECK-LABEL: tile.kernel @sum_ordered
// CHECK-SAME:    tawac.sink_reductions = {sunk = 0 : i64, kept = ["a sum without fastmath<reassoc>: its order is kept"]}
// CHECK:         scf.for %{{.*}} -> (tensor<8xf32>) {
// CHECK:           tile.reduce sum %{{.*}}, 1 : tensor<8x256xf32> -> tensor<8xf32>
// CHECK-NEXT:      arith.addf
tile.kernel @sum_ordered(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %o: !tile.tensor<?xf32, ["M"]>) {
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  %pid = tile.program_id x
  %c8 = arith.constant 8 : index
  %m0 = arith.muli %pid, %c8 : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xf32, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<8xf32>
  %s = scf.for %n = %c0 to %N step %c256 iter_args(%acc = %zero) -> (tensor<8xf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<8x256xf32>
    %r = tile.reduce sum %xt, 1 : tensor<8x256xf32> -> tensor<8xf32>
    %acc_new = arith.addf %acc, %r : tensor<8xf32>
    scf.yield %acc_new : tensor<8xf32>
  }
  tile.store %s, %o[%m0] : tensor<8xf32> -> !tile.tensor<?xf32, ["M"]>
  tile.return
}

// A max (written max(r, acc)) from a value that is not the identity, next to a carried
// value that is not an accumulator: the max's tile takes the accumulator's place among
// the iteration arguments, the other stays first; after the loop the tile's row max is
// combined with the initial value in the written order.
// CHECK-LABEL: tile.kernel @max_not_identity
// CHECK-SAME:    tawac.sink_reductions = {sunk = 1 : i64, kept = []}
// CHECK:         %[[FLOOR:.*]] = arith.constant dense<-1.000000e+00> : tensor<8xf32>
// CHECK-NEXT:    %[[NI:.*]] = arith.constant dense<0xff800000> : tensor<8x128xf32>
// CHECK-NEXT:    %{{.*}}, %[[L:.*]] = scf.for %{{.*}} iter_args(%{{.*}} = %c0, %[[T:.*]] = %[[NI]]) -> (index, tensor<8x128xf32>) {
// CHECK:           %[[M:.*]] = arith.maximumf %{{.*}}, %[[T]] : tensor<8x128xf32>
// CHECK:           scf.yield %{{.*}}, %[[M]] : index, tensor<8x128xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R:.*]] = tile.reduce max %[[L]], 1 : tensor<8x128xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[F:.*]] = arith.maximumf %[[R]], %[[FLOOR]] : tensor<8xf32>
// CHECK-NEXT:    tile.store %[[F]]
tile.kernel @max_not_identity(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %o: !tile.tensor<?xf32, ["M"]>, %k: !tile.tensor<?xf32, ["M"]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %pid = tile.program_id x
  %c8 = arith.constant 8 : index
  %m0 = arith.muli %pid, %c8 : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xf32, ["M", "N"]>
  %floor = arith.constant dense<-1.000000e+00> : tensor<8xf32>
  %cnt, %m = scf.for %n = %c0 to %N step %c128 iter_args(%count = %c0, %acc = %floor) -> (index, tensor<8xf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<8x128xf32>
    %r = tile.reduce max %xt, 1 : tensor<8x128xf32> -> tensor<8xf32>
    %acc_new = arith.maximumf %r, %acc : tensor<8xf32>
    %count_new = arith.addi %count, %c1 : index
    scf.yield %count_new, %acc_new : index, tensor<8xf32>
  }
  tile.store %m, %o[%m0] : tensor<8xf32> -> !tile.tensor<?xf32, ["M"]>
  tile.return
}

// A 1-d tile's minimum to a scalar: the loop carries a 1-d tile.
// CHECK-LABEL: tile.kernel @min_scalar
// CHECK-SAME:    tawac.sink_reductions = {sunk = 1 : i64, kept = []}
// CHECK:         scf.for %{{.*}} -> (tensor<1024xf32>) {
// CHECK:           arith.minimumf %{{.*}} : tensor<1024xf32>
// CHECK:         tile.reduce min %{{.*}}, 0 : tensor<1024xf32> -> f32
tile.kernel @min_scalar(%x: !tile.tensor<?xf32, ["N"]>, %o: !tile.tensor<?xf32, ["P"]>) {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  %N = tile.dim %x[0] : !tile.tensor<?xf32, ["N"]>
  %inf = arith.constant 0x7F800000 : f32
  %lo = scf.for %n = %c0 to %N step %c1024 iter_args(%acc = %inf) -> (f32) {
    %xt = tile.load %x[%n] padding inf : !tile.tensor<?xf32, ["N"]> -> tensor<1024xf32>
    %r = tile.reduce min %xt, 0 : tensor<1024xf32> -> f32
    %acc_new = arith.minimumf %acc, %r : f32
    scf.yield %acc_new : f32
  }
  %v = tile.splat %lo : f32 -> tensor<1xf32>
  %pid = tile.program_id x
  tile.store %v, %o[%pid] : tensor<1xf32> -> !tile.tensor<?xf32, ["P"]>
  tile.return
}

// Kept: a reduction also used elsewhere in the loop (the softmax's online max feeds the
// exponentials), a max combined by a sum, and a tile too large for the registers
// (64 x 1024 f32: 512 values a thread of one warp group).
// CHECK-LABEL: tile.kernel @kept
// CHECK-SAME:    tawac.sink_reductions = {sunk = 0 : i64, kept = ["a running max also used in the loop", "a max reduction combined by arith.addf", "a sum over 64x1024 tiles: 512 values a thread, more than 64"]}
tile.kernel @kept(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %o: !tile.tensor<?xf32, ["M"]>) {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  %pid = tile.program_id x
  %c64 = arith.constant 64 : index
  %m0 = arith.muli %pid, %c64 : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xf32, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %a, %b, %c = scf.for %n = %c0 to %N step %c1024 iter_args(%m = %zero, %s = %zero, %t = %zero) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<64x1024xf32>
    %mx = tile.reduce max %xt, 1 : tensor<64x1024xf32> -> tensor<64xf32>
    %m_new = arith.maximumf %m, %mx : tensor<64xf32>
    %mb = tile.broadcast %m_new, 0 : tensor<64xf32> -> tensor<64x1024xf32>
    %e = arith.subf %xt, %mb : tensor<64x1024xf32>
    %mx2 = tile.reduce max %e, 1 : tensor<64x1024xf32> -> tensor<64xf32>
    %s_new = arith.addf %s, %mx2 fastmath<fast> : tensor<64xf32>
    %r = tile.reduce sum %e, 1 : tensor<64x1024xf32> -> tensor<64xf32>
    %t_new = arith.addf %t, %r fastmath<fast> : tensor<64xf32>
    scf.yield %m_new, %s_new, %t_new : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
  }
  %ab = arith.addf %a, %b : tensor<64xf32>
  %abc = arith.addf %ab, %c : tensor<64xf32>
  tile.store %abc, %o[%m0] : tensor<64xf32> -> !tile.tensor<?xf32, ["M"]>
  tile.return
}

// Two accumulators around a carried index: each tile takes its accumulator's place.
// CHECK-LABEL: tile.kernel @two
// CHECK-SAME:    tawac.sink_reductions = {sunk = 2 : i64, kept = []}
// CHECK:         %[[S:.*]], %{{.*}}, %[[M:.*]] = scf.for %{{.*}} -> (tensor<8x128xf32>, index, tensor<8x128xf32>) {
// CHECK:         tile.reduce sum %[[S]], 1
// CHECK-NEXT:    tile.reduce max %[[M]], 1
tile.kernel @two(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %o: !tile.tensor<?xf32, ["M"]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %pid = tile.program_id x
  %c8 = arith.constant 8 : index
  %m0 = arith.muli %pid, %c8 : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xf32, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<8xf32>
  %ninf = arith.constant dense<0xFF800000> : tensor<8xf32>
  %s, %cnt, %m = scf.for %n = %c0 to %N step %c128 iter_args(%sa = %zero, %count = %c0, %ma = %ninf) -> (tensor<8xf32>, index, tensor<8xf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<8x128xf32>
    %rs = tile.reduce sum %xt, 1 : tensor<8x128xf32> -> tensor<8xf32>
    %sa_new = arith.addf %sa, %rs fastmath<reassoc> : tensor<8xf32>
    %count_new = arith.addi %count, %c1 : index
    %rm = tile.reduce max %xt, 1 : tensor<8x128xf32> -> tensor<8xf32>
    %ma_new = arith.maximumf %ma, %rm : tensor<8xf32>
    scf.yield %sa_new, %count_new, %ma_new : tensor<8xf32>, index, tensor<8xf32>
  }
  %sm = arith.addf %s, %m : tensor<8xf32>
  tile.store %sm, %o[%m0] : tensor<8xf32> -> !tile.tensor<?xf32, ["M"]>
  tile.return
}
