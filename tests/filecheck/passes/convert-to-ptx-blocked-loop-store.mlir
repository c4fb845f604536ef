// convert-to-ptx: a blocked-layout tile stored inside a loop over column blocks (the RMS
// norm's second loop at 16 rows a program) leaves in 16-byte vectors: the column
// coordinate is the loop's induction variable, from 0 in steps of BLOCK_N, so every
// 8-element run starts on a multiple of 8 (`multiple_of`), and with the destination's
// rows of whole 16-byte pieces (checked at launch) a run is in bounds or out as a whole.
// Before, each element was a predicated `st.global.b16`: 32 stores a thread a block.
// (The RMS norm's row block is resident, so its stores carry an `evict_first` hint.)
// At a column coordinate that is not such a multiple, the stores stay one per element.
// RUN: tawac compile %S/../../../examples/rmsnorm.mlir -D BLOCK_M=16 -D BLOCK_N=256 -o %t.ptx && filecheck %s < %t.ptx
// RUN: tawac compile %s -o %t2.ptx && filecheck %s --check-prefix=ODD < %t2.ptx

// CHECK-LABEL: .visible .entry rmsnorm(
// CHECK-NOT:   st.global.b16
// CHECK-COUNT-4: @%p{{[0-9]+}} st.global.L2::cache_hint.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}};
// CHECK-NOT:   st.global

// ODD-LABEL: .visible .entry odd_start(
// ODD-NOT:     st.global.v4
// ODD:         st.global.b16
tile.kernel @odd_start(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c1 = arith.constant 1 : index
  %bm = arith.constant 16 : index
  %bn = arith.constant 256 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  scf.for %n = %c1 to %N step %bn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<16x256xbf16>
    %xf = arith.extf %xt : tensor<16x256xbf16> to tensor<16x256xf32>
    %o = arith.addf %xf, %xf : tensor<16x256xf32>
    %o16 = arith.truncf %o : tensor<16x256xf32> to tensor<16x256xbf16>
    tile.store %o16, %y[%m0, %n] : tensor<16x256xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  }
  tile.return
}
