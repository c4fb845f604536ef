// The heuristic's ring depths where shared memory is short: attention with a 128x128
// bias tile at head dim 128 fits its K, V and bias rings one slot deep beside Q's two
// slots and the output's staging tile. With one V slot the loop's two-stage split would
// deadlock, so V's ring gets the second slot that still fits (priced faster by the
// timeline model), and the loop takes the split (P V of the previous iteration in
// stage 1). A depth given explicitly is kept, and the loop then stays in one stage.
// lower-aref lays the rings out back to back, all the mbarriers after them.
// RUN: tawac opt %S/../../data/attention_bias.mlir -p 'warp-specialize,plan' | filecheck %s --check-prefix=SPLIT
// RUN: tawac opt %S/../../data/attention_bias.mlir -p 'warp-specialize,plan{stages=1}' | filecheck %s --check-prefix=GIVEN
// RUN: tawac opt %S/../../data/attention_bias.mlir -p 'warp-specialize,plan,pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref' | filecheck %s --check-prefix=LAYOUT

// SPLIT: arefs = [q: depth 2, k: depth 1, v: depth 2, bias: depth 1], loops = [consumer 0: [0 aref.get, 1 tile.dot, {{.*}}23 aref.get stage 1, 24 tile.dot stage 1,

// GIVEN: arefs = [q: depth 2, k: depth 1, v: depth 1, bias: depth 1]
// GIVEN-NOT: stage 1

// LAYOUT:      hopper.smem_alloc offset 0 : !hopper.smem<2x128x128xbf16, swizzle 128>
// LAYOUT-NEXT: hopper.mbarrier_alloc offset 196608 : !hopper.mbarriers<2>
// LAYOUT-NEXT: hopper.mbarrier_alloc offset 196624 : !hopper.mbarriers<2>
// LAYOUT-NEXT: hopper.smem_alloc offset 65536 : !hopper.smem<1x128x128xbf16, swizzle 128>
// LAYOUT:      hopper.smem_alloc offset 98304 : !hopper.smem<2x128x128xbf16, swizzle 128>
// LAYOUT:      hopper.smem_alloc offset 163840 : !hopper.smem<1x128x128xbf16, swizzle 128>
// LAYOUT-NEXT: hopper.mbarrier_alloc offset 196688 : !hopper.mbarriers<1>
