// warp-specialize with a lock (a kernel of 1-d tiles): the load before the spin streams
// through the producer, and the consumer receives it (aref.get) before the spin even
// where it reads it after the release (the read happens before the release); the load
// after the acquire is the consumer's own, never the producer's (TMA would read y before
// the program holds the lock). A lock in a kernel with 2-d tiles, or in a kernel widen
// rewrote into other programs, is refused at the atomic.
// RUN: not tawac opt -p warp-specialize --split-input-file %s 2>&1 | filecheck %s

// CHECK-LABEL: tile.kernel @locked
// CHECK:       %[[R:.*]] = aref.create "x" : !aref.aref<[tensor<256xf32>], 1>
// CHECK-NOT:   aref.create
// CHECK:       aref.partition producer
// CHECK:         tile.load %x
// CHECK-NOT:     tile.load
// CHECK:       aref.partition consumer
// CHECK:         %[[A:.*]] = aref.get %[[R]]
// CHECK:         scf.while
// CHECK:           tile.atomic_cas acquire %l
// CHECK:         %[[V:.*]] = tile.load %y
// CHECK:         tile.store %{{.*}}, %y
// CHECK:         tile.atomic_xchg release %l
// CHECK:         arith.addf %[[A]], %[[A]]
// CHECK:         aref.consumed %[[R]]
tile.kernel @locked(%x: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?xf32, ["N"]>, %o: !tile.tensor<?xf32, ["N"]>, %l: !tile.tensor<?xi32, ["L"]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %p = tile.program_id x
  %at = arith.muli %p, %c256 : index
  %a = tile.load %x[%at] : !tile.tensor<?xf32, ["N"]> -> tensor<256xf32>
  scf.while () : () -> () {
    %old = tile.atomic_cas acquire %l[%c0], %c0, %c1 : !tile.tensor<?xi32, ["L"]>
    %held = arith.cmpi eq, %old, %c1 : index
    scf.condition(%held)
  } do {
    scf.yield
  }
  %v = tile.load %y[%c0] : !tile.tensor<?xf32, ["N"]> -> tensor<256xf32>
  %w = arith.addf %v, %v : tensor<256xf32>
  tile.store %w, %y[%c0] : tensor<256xf32> -> !tile.tensor<?xf32, ["N"]>
  %free = tile.atomic_xchg release %l[%c0], %c0 : !tile.tensor<?xi32, ["L"]>
  %b = arith.addf %a, %a : tensor<256xf32>
  tile.store %b, %o[%at] : tensor<256xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}

// -----

tile.kernel @tiles(%x: !tile.tensor<?x?xf32>, %l: !tile.tensor<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = tile.load %x[%c0, %c0] : !tile.tensor<?x?xf32> -> tensor<64x64xf32>
  %old = tile.atomic_cas acq_rel %l[%c0], %c0, %c1 : !tile.tensor<?xi32>
// CHECK: warp-specialize-locks.mlir:[[# @LINE - 1]]:10: error: warp-specialize: tile.atomic_cas in a kernel with 2-d tiles is not supported yet
  tile.store %t, %x[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

tile.kernel @widened(%x: !tile.tensor<?xf32>, %l: !tile.tensor<?xi32>) attributes {tawac.widen = {programs = 2 : i64, rows = 128 : i64}} {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : !tile.tensor<?xf32> -> tensor<256xf32>
  %was = tile.atomic_xchg release %l[%c0], %c0 : !tile.tensor<?xi32>
// CHECK: warp-specialize-locks.mlir:[[# @LINE - 1]]:10: error: warp-specialize: tile.atomic_xchg in a kernel that widen rewrote into other programs
  tile.store %t, %x[%c0] : tensor<256xf32> -> !tile.tensor<?xf32>
  tile.return
}
