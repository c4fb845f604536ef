// A kernel of 1-d tiles: each 1-d tile.load whose coordinates the producer can compute
// goes to the producer through an aref of its own (zero-padded: TMA fills zeros); the
// consumer gets it and selects the load's -inf padding past the tensor's size after its
// widening to f32. A load at a coordinate computed from consumer math (a reduction)
// stays in the consumer, read from global memory by its threads.
// RUN: tawac opt -p warp-specialize %s | filecheck %s

// CHECK-LABEL: tile.kernel @row
// CHECK:       %[[R:.*]] = aref.create "x" : !aref.aref<[tensor<1024xbf16>], 1>
// CHECK-NOT:   aref.create
// CHECK:       aref.partition producer
// CHECK:         %[[T:.*]] = tile.load %x[%{{.*}}, %{{.*}}] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<1024xbf16>
// CHECK-NEXT:    %[[I:.*]] = arith.constant 0 : index
// CHECK-NEXT:    aref.put %[[R]]{{\[}}%[[I]]], %[[T]]
// CHECK-NOT:     tile.load
// CHECK:       aref.partition consumer
// CHECK:         %[[G:.*]] = aref.get %[[R]]
// CHECK-NEXT:    %[[F:.*]] = arith.extf %[[G]]
// CHECK-NEXT:    aref.consumed %[[R]]
// CHECK:         %[[PAD:.*]] = tile.splat %{{.*}} : f32 -> tensor<1024xf32>
// CHECK:         %[[C:.*]] = tile.iota 0, %[[C0:.*]] : tensor<1024xi32>
// CHECK:         %[[N:.*]] = tile.dim %x[1]
// CHECK:         %[[NS:.*]] = tile.splat %[[N]] : index -> tensor<1024xi32>
// CHECK:         %[[IN:.*]] = tile.cmpi slt, %[[C]], %[[NS]]
// CHECK:         %[[SEL:.*]] = tile.select %[[IN]], %[[F]], %[[PAD]]
// CHECK:         tile.reduce max %[[SEL]], 0
// CHECK:         tile.load %w[%{{.*}}] : !tile.tensor<?xf32, ["K"]> -> tensor<256xf32>
// CHECK:         tile.store
tile.kernel @row(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xf32, ["K"]>, %y: !tile.tensor<?xf32, ["K"]>) {
  %c0 = arith.constant 0 : index
  %row = tile.program_id x
  %xt = tile.load %x[%row, %c0] padding -inf : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<1024xbf16>
  %xf = arith.extf %xt : tensor<1024xbf16> to tensor<1024xf32>
  %m = tile.reduce max %xf, 0 : tensor<1024xf32> -> f32
  %k = arith.fptosi %m : f32 to i32
  %ki = arith.index_cast %k : i32 to index
  %wt = tile.load %w[%ki] : !tile.tensor<?xf32, ["K"]> -> tensor<256xf32>
  tile.store %wt, %y[%c0] : tensor<256xf32> -> !tile.tensor<?xf32, ["K"]>
  tile.return
}
