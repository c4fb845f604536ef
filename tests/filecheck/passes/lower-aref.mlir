// lower-aref: each aref becomes 1024-byte aligned shared-memory rings (one per payload
// tile), a full and an empty mbarrier per slot (full: 1 arrival; empty: one per consumer
// warp = 4 x consumer warp groups), initialised before a CTA barrier; put/get/consumed
// become waits with slot = it mod D and phase = (it / D) & 1 (the producer waits for
// parity phase ^ 1), arrive.expect_tx with the summed TMA bytes, TMA loads, smem views,
// wgmma and arrivals.  The register budgets (applied from the schedule by
// cooperative-consumers) are checked against the register file.
// RUN: tawac opt --split-input-file -p lower-aref %s | filecheck %s
// RUN: not tawac opt --split-input-file -p 'plan{stages=5 mma-depth=0 consumer-warp-groups=1 persistent=false coarse-pipeline=false},pipeline,lower-aref' %s 2>&1 | filecheck %s --check-prefix=BUDGET

// Five stages of 128x64 + 256x64 bf16 tiles need 5 x 49152 + 5 x 16 bytes.

// CHECK-LABEL: tile.kernel @gemm(
// CHECK-SAME:    attributes {tawac.schedule = #tawac.schedule<smem_bytes = 147504>}
// CHECK-NEXT:    %[[RA:.*]] = hopper.smem_alloc offset 0 : !hopper.smem<3x128x64xbf16, swizzle 128>
// CHECK-NEXT:    %[[RB:.*]] = hopper.smem_alloc offset 49152 : !hopper.smem<3x256x64xbf16, swizzle 128>
// CHECK-NEXT:    %[[FULL:.*]] = hopper.mbarrier_alloc offset 147456 : !hopper.mbarriers<3>
// CHECK-NEXT:    %[[EMPTY:.*]] = hopper.mbarrier_alloc offset 147480 : !hopper.mbarriers<3>
// CHECK-NEXT:    hopper.mbarrier_init %[[FULL]] count 1 : !hopper.mbarriers<3>
// CHECK-NEXT:    hopper.mbarrier_init %[[EMPTY]] count 8 : !hopper.mbarriers<3>
// CHECK-NEXT:    hopper.cta_sync
// CHECK-NEXT:    aref.partition producer warp_groups 1 regs 24 {
// CHECK:           scf.for %[[K:.*]] = %[[C0:[^ ]*]] to
// CHECK-NEXT:        %[[IT:.*]] = arith.divui
// CHECK-NEXT:        %[[D:.*]] = arith.constant 3 : index
// CHECK-NEXT:        %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:        %[[SLOT:.*]] = arith.remui %[[IT]], %[[D]] : index
// CHECK-NEXT:        %[[ROUND:.*]] = arith.divui %[[IT]], %[[D]] : index
// CHECK-NEXT:        %[[PHASE:.*]] = arith.andi %[[ROUND]], %[[ONE]] : index
// CHECK-NEXT:        %[[ONE2:.*]] = arith.constant 1 : index
// CHECK-NEXT:        %[[EPH:.*]] = arith.xori %[[PHASE]], %[[ONE2]] : index
// CHECK-NEXT:        hopper.mbarrier_wait %[[EMPTY]][%[[SLOT]]], %[[EPH]] : !hopper.mbarriers<3>
// CHECK-NEXT:        hopper.mbarrier_arrive_expect_tx %[[FULL]][%[[SLOT]]], 49152 : !hopper.mbarriers<3>
// CHECK-NEXT:        hopper.tma_load %a[%[[C0]], %[[K]]], %[[RA]][%[[SLOT]]], %[[FULL]] : !tile.tensor<?x?xbf16>, !hopper.smem<3x128x64xbf16, swizzle 128>, !hopper.mbarriers<3>
// CHECK-NEXT:        hopper.tma_load %b[%[[C0]], %[[K]]], %[[RB]][%[[SLOT]]], %[[FULL]] : !tile.tensor<?x?xbf16>, !hopper.smem<3x256x64xbf16, swizzle 128>, !hopper.mbarriers<3>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    aref.partition consumer warp_groups 2 regs 240 {
// CHECK:           %[[ACC:.*]] = scf.for {{.*}} iter_args(%[[ACCI:.*]] = %{{.*}})
// CHECK-NEXT:        %[[CIT:.*]] = arith.divui
// CHECK-NEXT:        %[[CD:.*]] = arith.constant 3 : index
// CHECK-NEXT:        %[[CONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:        %[[CSLOT:.*]] = arith.remui %[[CIT]], %[[CD]] : index
// CHECK-NEXT:        %[[CROUND:.*]] = arith.divui %[[CIT]], %[[CD]] : index
// CHECK-NEXT:        %[[CPHASE:.*]] = arith.andi %[[CROUND]], %[[CONE]] : index
// CHECK-NEXT:        hopper.mbarrier_wait %[[FULL]][%[[CSLOT]]], %[[CPHASE]] : !hopper.mbarriers<3>
// CHECK-NEXT:        %[[X:.*]] = hopper.smem_slot %[[RA]][%[[CSLOT]]] : !hopper.smem<3x128x64xbf16, swizzle 128> -> !hopper.smem_tile<128x64xbf16, swizzle 128>
// CHECK-NEXT:        %[[Y:.*]] = hopper.smem_slot %[[RB]][%[[CSLOT]]] : !hopper.smem<3x256x64xbf16, swizzle 128> -> !hopper.smem_tile<256x64xbf16, swizzle 128>
// CHECK-NEXT:        %[[MMA:.*]] = hopper.wgmma %[[X]], %[[Y]], %[[ACCI]] : !hopper.smem_tile<128x64xbf16, swizzle 128>, !hopper.smem_tile<256x64xbf16, swizzle 128> -> tensor<128x256xf32>
// CHECK-NEXT:        %[[W:.*]] = hopper.wgmma_wait %[[MMA]] pending 0
// CHECK-NEXT:        %[[RD:.*]] = arith.constant 3 : index
// CHECK-NEXT:        %{{.*}} = arith.constant 1 : index
// CHECK-NEXT:        %[[RSLOT:.*]] = arith.remui %[[CIT]], %[[RD]] : index
// CHECK:             hopper.mbarrier_arrive %[[EMPTY]][%[[RSLOT]]] : !hopper.mbarriers<3>
// CHECK-NEXT:        scf.yield %[[W]]
// CHECK-NOT:     aref.
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
// BUDGET: {{.*}}lower-aref.mlir:[[# @LINE - 1]]:1: error: lower-aref: the aref rings need 245840 bytes of shared memory, more than the 232448 bytes a CTA can have; use fewer stages or smaller tiles
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
  aref.partition producer warp_groups 1 regs 24 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
    scf.for %k = %c0 to %K step %c64 {
      %x = tile.load %a[%c0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
      %y = tile.load %b[%c0, %k] : !tile.tensor<?x?xbf16> -> tensor<256x64xbf16>
      %it = arith.divui %k, %c64 : index
      aref.put %r[%it], %x, %y : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
    }
  }
  aref.partition consumer warp_groups 2 regs 240 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
    %zero = arith.constant dense<0.0> : tensor<128x256xf32>
    %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
      %it = arith.divui %k, %c64 : index
      %x, %y = aref.get %r[%it] : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
      %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
      %w = hopper.wgmma_wait %d pending 0 : tensor<128x256xf32>
      aref.consumed %r[%it] : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
      scf.yield %w : tensor<128x256xf32>
    }
    tile.store %acc, %c[%c0, %c0] : tensor<128x256xf32> -> !tile.tensor<?x?xf32>
  }
  tile.return
}

// -----

// Every column chunk of 128 bytes is its own 1024-aligned block: a 64x128 bf16 tile is
// two 8 KiB chunks. A 4x64 bf16 tile, fewer rows than the swizzle's 8-row pattern (which
// would pad it to 1024 bytes a slot), is unswizzled, its rows one after another: 512
// bytes a slot.  The TMA brings 16384 + 512 bytes per transfer.  One consumer warp
// group: 4 empty arrivals.
// CHECK-LABEL: tile.kernel @chunks(
// CHECK-SAME:    attributes {tawac.schedule = #tawac.schedule<smem_bytes = 33824>}
// CHECK-NEXT:    hopper.smem_alloc offset 0 : !hopper.smem<2x64x128xbf16, swizzle 128>
// CHECK-NEXT:    hopper.smem_alloc offset 32768 : !hopper.smem<2x4x64xbf16, swizzle 0>
// CHECK-NEXT:    %[[FULL:.*]] = hopper.mbarrier_alloc offset 33792 : !hopper.mbarriers<2>
// CHECK-NEXT:    %[[EMPTY:.*]] = hopper.mbarrier_alloc offset 33808 : !hopper.mbarriers<2>
// CHECK-NEXT:    hopper.mbarrier_init %[[FULL]] count 1 : !hopper.mbarriers<2>
// CHECK-NEXT:    hopper.mbarrier_init %[[EMPTY]] count 4 : !hopper.mbarriers<2>
// CHECK:         hopper.mbarrier_arrive_expect_tx %[[FULL]][%{{.*}}], 16896 : !hopper.mbarriers<2>
// CHECK:         aref.partition consumer warp_groups 1 regs 256 {
tile.kernel @chunks(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %r = aref.create : !aref.aref<[tensor<64x128xbf16>, tensor<4x64xbf16>], 2>
  aref.partition producer warp_groups 1 regs 24 {
    %c0 = arith.constant 0 : index
    %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x128xbf16>
    %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<4x64xbf16>
    aref.put %r[%c0], %x, %y : !aref.aref<[tensor<64x128xbf16>, tensor<4x64xbf16>], 2>
  }
  aref.partition consumer warp_groups 1 regs 256 {
    %c0 = arith.constant 0 : index
    %x, %y = aref.get %r[%c0] : !aref.aref<[tensor<64x128xbf16>, tensor<4x64xbf16>], 2>
    %zero = arith.constant dense<0.0> : tensor<64x64xf32>
    %d = tile.dot %x, %x, %zero transpose_rhs : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<64x64xf32>
    %w = hopper.wgmma_wait %d pending 0 : tensor<64x64xf32>
    %zero4 = arith.constant dense<0.0> : tensor<4x4xf32>
    %e = tile.dot %y, %y, %zero4 transpose_rhs : tensor<4x64xbf16>, tensor<4x64xbf16> -> tensor<4x4xf32>
    %v = hopper.wgmma_wait %e pending 0 : tensor<4x4xf32>
    aref.consumed %r[%c0] : !aref.aref<[tensor<64x128xbf16>, tensor<4x64xbf16>], 2>
  }
  tile.return
}
