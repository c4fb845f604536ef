// Regression (fixed): hopper.smem_slot does not verify that its result type is the tile type of its
// ring (SmemRingType.tile_type); any !hopper.smem_tile is accepted, so IR that reads a
// bf16 128x64 ring as an f16 64x64 tile with another swizzle verifies.  Likewise
// hopper.wgmma does not check its operand/accumulator shapes.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @slot_type(%a: !tile.tensor<?x?xf16>) {
  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 128>
  %c0 = arith.constant 0 : index
  %x = hopper.smem_slot %ra[%c0] : !hopper.smem<2x128x64xbf16, swizzle 128> -> !hopper.smem_tile<64x64xf16, swizzle 32>
// CHECK: {{.*}}smem-slot-verifier.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: {{.*}}smem_slot
  tile.return
}

// -----

tile.kernel @wgmma_shape(%a: !tile.tensor<?x?xbf16>) {
  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 128>
  %c0 = arith.constant 0 : index
  %zero = arith.constant dense<0.0> : tensor<64x8xf32>
  %x = hopper.smem_slot %ra[%c0] : !hopper.smem<2x128x64xbf16, swizzle 128> -> !hopper.smem_tile<128x64xbf16, swizzle 128>
  %d = hopper.wgmma %x, %x, %zero : !hopper.smem_tile<128x64xbf16, swizzle 128>, !hopper.smem_tile<128x64xbf16, swizzle 128> -> tensor<64x8xf32>
// CHECK: {{.*}}smem-slot-verifier.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: {{.*}}wgmma
  tile.return
}
