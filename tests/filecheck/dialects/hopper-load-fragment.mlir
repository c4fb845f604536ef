// hopper.load_fragment: a shared-memory tile read into registers (the accumulator layout
// of the partition); round trip and verifier.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

// CHECK-LABEL: tile.kernel @load(
// CHECK:         %[[T:.*]] = hopper.smem_slot %{{.*}}[%{{.*}}] : !hopper.smem<1x128x128xf32, swizzle 128> -> !hopper.smem_tile<128x128xf32, swizzle 128>
// CHECK-NEXT:    %{{.*}} = hopper.load_fragment %[[T]] : !hopper.smem_tile<128x128xf32, swizzle 128> -> tensor<128x128xf32>
tile.kernel @load() {
  %r = hopper.smem_alloc offset 0 : !hopper.smem<1x128x128xf32, swizzle 128>
  %c0 = arith.constant 0 : index
  %t = hopper.smem_slot %r[%c0] : !hopper.smem<1x128x128xf32, swizzle 128> -> !hopper.smem_tile<128x128xf32, swizzle 128>
  %v = hopper.load_fragment %t : !hopper.smem_tile<128x128xf32, swizzle 128> -> tensor<128x128xf32>
  tile.return
}

// -----

tile.kernel @load_wrong_type() {
  %r = hopper.smem_alloc offset 0 : !hopper.smem<1x128x128xbf16, swizzle 128>
  %c0 = arith.constant 0 : index
  %t = hopper.smem_slot %r[%c0] : !hopper.smem<1x128x128xbf16, swizzle 128> -> !hopper.smem_tile<128x128xbf16, swizzle 128>
  %v = hopper.load_fragment %t : !hopper.smem_tile<128x128xbf16, swizzle 128> -> tensor<128x64xbf16>
// CHECK: {{.*}}hopper-load-fragment.mlir:[[# @LINE - 1]]:8: error: hopper.load_fragment: !hopper.smem_tile<128x128xbf16, swizzle 128> cannot be read as tensor<128x64xbf16> (shape and element type must agree)
  tile.return
}
