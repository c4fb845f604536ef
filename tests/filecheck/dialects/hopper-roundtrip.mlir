// Every hopper op and type prints in custom form and re-parses to the same text.
// RUN: tawac opt %s | tawac opt - | filecheck %s
// RUN: tawac opt %s | filecheck %s

// CHECK-LABEL: tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>) {
// CHECK-NEXT:  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 128>
// CHECK-NEXT:  %rb = hopper.smem_alloc offset 32768 : !hopper.smem<2x128x64xbf16, swizzle 128>
// CHECK-NEXT:  %rc = hopper.smem_alloc offset 65536 : !hopper.smem<1x64x32xf16, swizzle 64>
// CHECK-NEXT:  %rw = hopper.smem_alloc offset 98304 : !hopper.smem<2x64x128xbf16, swizzle 128>
// CHECK-NEXT:  %full = hopper.mbarrier_alloc offset 69632 : !hopper.mbarriers<2>
// CHECK-NEXT:  %empty = hopper.mbarrier_alloc offset 69648 : !hopper.mbarriers<2>
// CHECK-NEXT:  hopper.mbarrier_init %full count 1 : !hopper.mbarriers<2>
// CHECK-NEXT:  hopper.mbarrier_init %empty count 4 : !hopper.mbarriers<2>
// CHECK-NEXT:  hopper.cta_sync
// CHECK-NEXT:  aref.partition producer warp_groups 1 regs 40 {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    hopper.mbarrier_wait %empty[%c0], %c1 : !hopper.mbarriers<2>
// CHECK-NEXT:    hopper.mbarrier_arrive_expect_tx %full[%c0], 32768 : !hopper.mbarriers<2>
// CHECK-NEXT:    hopper.tma_load %a[%c0, %c0], %ra[%c0], %full : !tile.tensor<?x?xbf16>, !hopper.smem<2x128x64xbf16, swizzle 128>, !hopper.mbarriers<2>
// CHECK-NEXT:    hopper.tma_load %b[%c0, %c0], %rb[%c0], %full : !tile.tensor<?x?xbf16>, !hopper.smem<2x128x64xbf16, swizzle 128>, !hopper.mbarriers<2>
// CHECK-NEXT:  }
// CHECK-NEXT:  aref.partition consumer warp_groups 1 regs 232 {
// CHECK-NEXT:    %c0_1 = arith.constant 0 : index
// CHECK-NEXT:    %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
// CHECK-NEXT:    hopper.mbarrier_wait %full[%c0_1], %c0_1 : !hopper.mbarriers<2>
// CHECK-NEXT:    %x = hopper.smem_slot %ra[%c0_1] : !hopper.smem<2x128x64xbf16, swizzle 128> -> !hopper.smem_tile<128x64xbf16, swizzle 128>
// CHECK-NEXT:    %y = hopper.smem_slot %rb[%c0_1] : !hopper.smem<2x128x64xbf16, swizzle 128> -> !hopper.smem_tile<128x64xbf16, swizzle 128>
// CHECK-NEXT:    %w = hopper.smem_slot %rw[%c0_1] : !hopper.smem<2x64x128xbf16, swizzle 128> -> !hopper.smem_tile<64x128xbf16, swizzle 128>
// CHECK-NEXT:    %d = hopper.wgmma %x, %w, %zero transpose_b : !hopper.smem_tile<128x64xbf16, swizzle 128>, !hopper.smem_tile<64x128xbf16, swizzle 128> -> tensor<128x128xf32>
// CHECK-NEXT:    %e = hopper.wgmma %w, %w, %d transpose_a transpose_b : !hopper.smem_tile<64x128xbf16, swizzle 128>, !hopper.smem_tile<64x128xbf16, swizzle 128> -> tensor<128x128xf32>
// CHECK-NEXT:    %f = hopper.wgmma %x, %y, %e : !hopper.smem_tile<128x64xbf16, swizzle 128>, !hopper.smem_tile<128x64xbf16, swizzle 128> -> tensor<128x128xf32>
// CHECK-NEXT:    %g = hopper.wgmma_wait %f pending 0 : tensor<128x128xf32>
// CHECK-NEXT:    hopper.mbarrier_arrive %empty[%c0_1] : !hopper.mbarriers<2>
// CHECK-NEXT:  }
// CHECK-NEXT:  tile.return
// CHECK-NEXT:  }
// CHECK-NEXT:}
tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>) {
  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 128>
  %rb = hopper.smem_alloc offset 32768 : !hopper.smem<2x128x64xbf16, swizzle 128>
  %rc = hopper.smem_alloc offset 65536 : !hopper.smem<1x64x32xf16, swizzle 64>
  %rw = hopper.smem_alloc offset 98304 : !hopper.smem<2x64x128xbf16, swizzle 128>
  %full = hopper.mbarrier_alloc offset 69632 : !hopper.mbarriers<2>
  %empty = hopper.mbarrier_alloc offset 69648 : !hopper.mbarriers<2>
  hopper.mbarrier_init %full count 1 : !hopper.mbarriers<2>
  hopper.mbarrier_init %empty count 4 : !hopper.mbarriers<2>
  hopper.cta_sync
  aref.partition producer warp_groups 1 regs 40 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    hopper.mbarrier_wait %empty[%c0], %c1 : !hopper.mbarriers<2>
    hopper.mbarrier_arrive_expect_tx %full[%c0], 32768 : !hopper.mbarriers<2>
    hopper.tma_load %a[%c0, %c0], %ra[%c0], %full : !tile.tensor<?x?xbf16>, !hopper.smem<2x128x64xbf16, swizzle 128>, !hopper.mbarriers<2>
    hopper.tma_load %b[%c0, %c0], %rb[%c0], %full : !tile.tensor<?x?xbf16>, !hopper.smem<2x128x64xbf16, swizzle 128>, !hopper.mbarriers<2>
  }
  aref.partition consumer warp_groups 1 regs 232 {
    %c0 = arith.constant 0 : index
    %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    hopper.mbarrier_wait %full[%c0], %c0 : !hopper.mbarriers<2>
    %x = hopper.smem_slot %ra[%c0] : !hopper.smem<2x128x64xbf16, swizzle 128> -> !hopper.smem_tile<128x64xbf16, swizzle 128>
    %y = hopper.smem_slot %rb[%c0] : !hopper.smem<2x128x64xbf16, swizzle 128> -> !hopper.smem_tile<128x64xbf16, swizzle 128>
    %w = hopper.smem_slot %rw[%c0] : !hopper.smem<2x64x128xbf16, swizzle 128> -> !hopper.smem_tile<64x128xbf16, swizzle 128>
    %d = hopper.wgmma %x, %w, %zero transpose_b : !hopper.smem_tile<128x64xbf16, swizzle 128>, !hopper.smem_tile<64x128xbf16, swizzle 128> -> tensor<128x128xf32>
    %e = hopper.wgmma %w, %w, %d transpose_a transpose_b : !hopper.smem_tile<64x128xbf16, swizzle 128>, !hopper.smem_tile<64x128xbf16, swizzle 128> -> tensor<128x128xf32>
    %f = hopper.wgmma %x, %y, %e : !hopper.smem_tile<128x64xbf16, swizzle 128>, !hopper.smem_tile<128x64xbf16, swizzle 128> -> tensor<128x128xf32>
    %g = hopper.wgmma_wait %f pending 0 : tensor<128x128xf32>
    hopper.mbarrier_arrive %empty[%c0] : !hopper.mbarriers<2>
  }
  tile.return
}
