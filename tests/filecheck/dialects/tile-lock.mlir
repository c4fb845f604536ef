// tile.atomic_cas and tile.atomic_xchg (one i32 element, once per program, a memory
// order) and the spin of a lock around them (scf.while without loop-carried values):
// print as written and parse back (round trip), and canonicalize keeps every atomic (they
// read and write memory: two equal exchanges are two exchanges, an unused one is kept).
// RUN: tawac opt %s | tawac opt - | filecheck %s
// RUN: tawac opt %s --passes canonicalize | filecheck %s --check-prefix=KEPT

// CHECK-LABEL: tile.kernel @lock(%l: !tile.tensor<?xi32, ["L"]>, %y: !tile.tensor<?xf32, ["N"]>) {
// CHECK:         scf.while () : () -> () {
// CHECK-NEXT:      %old = tile.atomic_cas acquire %l[%c0], %c0, %c1 : !tile.tensor<?xi32, ["L"]>
// CHECK-NEXT:      %held = arith.cmpi eq, %old, %c1 : index
// CHECK-NEXT:      scf.condition(%held)
// CHECK-NEXT:    } do {
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK:         %was = tile.atomic_xchg relaxed %l[%c1], %c1 : !tile.tensor<?xi32, ["L"]>
// CHECK-NEXT:    %again = tile.atomic_xchg relaxed %l[%c1], %c1 : !tile.tensor<?xi32, ["L"]> {tawac.note}
// CHECK-NEXT:    %swap = tile.atomic_cas acq_rel %l[%c1], %c0, %c1 : !tile.tensor<?xi32, ["L"]>
// CHECK-NEXT:    %free = tile.atomic_xchg release %l[%c0], %c0 : !tile.tensor<?xi32, ["L"]>
// KEPT:        tile.atomic_cas acquire
// KEPT-COUNT-2: tile.atomic_xchg relaxed
// KEPT:        tile.atomic_cas acq_rel
// KEPT:        tile.atomic_xchg release
tile.kernel @lock(%l: !tile.tensor<?xi32, ["L"]>, %y: !tile.tensor<?xf32, ["N"]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.while () : () -> () {
    %old = tile.atomic_cas acquire %l[%c0], %c0, %c1 : !tile.tensor<?xi32, ["L"]>
    %held = arith.cmpi eq, %old, %c1 : index
    scf.condition(%held)
  } do {
    scf.yield
  }
  %v = tile.load %y[%c0] : !tile.tensor<?xf32, ["N"]> -> tensor<256xf32>
  tile.store %v, %y[%c0] : tensor<256xf32> -> !tile.tensor<?xf32, ["N"]>
  %was = tile.atomic_xchg relaxed %l[%c1], %c1 : !tile.tensor<?xi32, ["L"]>
  %again = tile.atomic_xchg relaxed %l[%c1], %c1 : !tile.tensor<?xi32, ["L"]> {tawac.note}
  %swap = tile.atomic_cas acq_rel %l[%c1], %c0, %c1 : !tile.tensor<?xi32, ["L"]>
  %free = tile.atomic_xchg release %l[%c0], %c0 : !tile.tensor<?xi32, ["L"]>
  tile.return
}
