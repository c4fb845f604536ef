// Verifier errors of the hopper dialect, one diagnostic per chunk.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @tma_coords(%a: !tile.tensor<?x?xbf16>) {
  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 128>
  %full = hopper.mbarrier_alloc offset 65536 : !hopper.mbarriers<2>
  %c0 = arith.constant 0 : index
  hopper.tma_load %a[%c0], %ra[%c0], %full : !tile.tensor<?x?xbf16>, !hopper.smem<2x128x64xbf16, swizzle 128>, !hopper.mbarriers<2>
// CHECK:      {{.*}}hopper-invalid.mlir:[[# @LINE - 1]]:3: error: hopper.tma_load: coordinates do not match the ranks
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @tma_ring_rank(%a: !tile.tensor<?x?xbf16>) {
  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x4x128x64xbf16, swizzle 128>
  %full = hopper.mbarrier_alloc offset 65536 : !hopper.mbarriers<2>
  %c0 = arith.constant 0 : index
  hopper.tma_load %a[%c0, %c0], %ra[%c0], %full : !tile.tensor<?x?xbf16>, !hopper.smem<2x4x128x64xbf16, swizzle 128>, !hopper.mbarriers<2>
// CHECK:      {{.*}}hopper-invalid.mlir:[[# @LINE - 1]]:3: error: hopper.tma_load: coordinates do not match the ranks
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @tma_elem(%a: !tile.tensor<?x?xf16>) {
  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 128>
  %full = hopper.mbarrier_alloc offset 65536 : !hopper.mbarriers<2>
  %c0 = arith.constant 0 : index
  hopper.tma_load %a[%c0, %c0], %ra[%c0], %full : !tile.tensor<?x?xf16>, !hopper.smem<2x128x64xbf16, swizzle 128>, !hopper.mbarriers<2>
// CHECK:      {{.*}}hopper-invalid.mlir:[[# @LINE - 1]]:3: error: hopper.tma_load: element types differ
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @wait_pending(%a: !tile.tensor<?x?xf16>) {
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %w = hopper.wgmma_wait %zero pending 8 : tensor<128x128xf32>
// CHECK:      {{.*}}hopper-invalid.mlir:[[# @LINE - 1]]:8: error: hopper.wgmma_wait: pending must be in 0..7
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @wait_type(%a: !tile.tensor<?x?xf16>) {
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %w = hopper.wgmma_wait %zero pending 1 : tensor<128x64xf32>
// CHECK:      {{.*}}hopper-invalid.mlir:[[# @LINE - 1]]:26: error: operand is used with type tensor<128x64xf32>, but has been previously used or defined with type tensor<128x128xf32>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @mbarrier_operand(%a: !tile.tensor<?x?xf16>) {
  %c0 = arith.constant 0 : index
  "hopper.mbarrier_arrive"(%c0, %c0) : (index, index) -> ()
// CHECK:      {{.*}}hopper-invalid.mlir:[[# @LINE - 1]]:3: error: operand 'bars' at position 0 does not verify
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

// Type verifier: the location is checked in tests/filecheck/bugs/type-error-location.mlir.
tile.kernel @swizzle(%a: !tile.tensor<?x?xbf16>) {
  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 48>
  tile.return
}
// CHECK: {{.*}}hopper-invalid.mlir{{(:[0-9]+:[0-9]+)?}}: error: swizzle must be 0, 32, 64 or 128 bytes, got {{.*}}48
