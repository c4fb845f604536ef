// convert-to-ptx of a lock (tile.atomic_cas in an scf.while, tile.atomic_xchg): each
// atomic is one atom of the consumer partition's first thread between two barriers of
// the partition (bar.sync 15, 128), with the op's memory order (.acquire, .release) at
// GPU scope, the old value handed to every thread through the shared scratch; the spin
// branches back (uniformly) while the old value is 1. The critical section's load of y is
// the consumer's own ld.global after the spin (x, loaded before the lock, streams through
// the producer's TMA), its store before the release; the launch's shared memory holds the
// 4-byte scratch.
// RUN: tawac compile %s -o %t.ptx && filecheck %s < %t.ptx
// RUN: filecheck %s --check-prefix=SIDECAR < %t.json

// CHECK:       cp.async.bulk.tensor.1d
// CHECK:       $L_spin_[[S:[0-9]+]]:
// CHECK:         bar.sync 15, 128;
// CHECK-NEXT:    @!%p{{[0-9]+}} bra $L_skip_[[FIRST:[0-9]+]];
// CHECK-NEXT:    mov.s32 %r[[OLD:[0-9]+]], -1;
// CHECK-NEXT:    @!%p{{[0-9]+}} bra $L_skip_[[INSIDE:[0-9]+]];
// CHECK-NEXT:    atom.acquire.gpu.global.cas.b32 %r[[NEW:[0-9]+]], [%rd{{[0-9]+}}], %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK-NEXT:    mov.b32 %r[[OLD]], %r[[NEW]];
// CHECK-NEXT:  $L_skip_[[INSIDE]]:
// CHECK-NEXT:    st.shared.b32 [%r[[SCRATCH:[0-9]+]]], %r[[OLD]];
// CHECK-NEXT:  $L_skip_[[FIRST]]:
// CHECK-NEXT:    bar.sync 15, 128;
// CHECK-NEXT:    ld.shared.b32 %r[[READ:[0-9]+]], [%r[[SCRATCH]]];
// CHECK-NEXT:    setp.eq.s32 %p[[BUSY:[0-9]+]], %r[[READ]], %r{{[0-9]+}};
// CHECK-NEXT:    @!%p[[BUSY]] bra.uni $L_spin_end_[[E:[0-9]+]];
// CHECK-NEXT:    bra.uni $L_spin_[[S]];
// CHECK-NEXT:  $L_spin_end_[[E]]:
// CHECK-NOT:     cp.async
// CHECK-NOT:     mbarrier
// CHECK:         ld.global.{{.*}}f32
// CHECK:         st.global.{{.*}}f32
// CHECK:         bar.sync 15, 128;
// CHECK:         atom.release.gpu.global.exch.b32 %r{{[0-9]+}}, [%rd{{[0-9]+}}], %r{{[0-9]+}};
// CHECK:         st.shared.b32
// CHECK:         bar.sync 15, 128;
// CHECK-NEXT:    ld.shared.b32

// SIDECAR: "dynamic_smem": {{[1-9][0-9]*}},
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
  %w = arith.addf %v, %a : tensor<256xf32>
  tile.store %w, %y[%c0] : tensor<256xf32> -> !tile.tensor<?xf32, ["N"]>
  %free = tile.atomic_xchg release %l[%c0], %c0 : !tile.tensor<?xi32, ["L"]>
  tile.store %a, %o[%at] : tensor<256xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}
