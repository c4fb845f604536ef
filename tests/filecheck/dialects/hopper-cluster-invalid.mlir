// Verifier errors of the cluster ops and fields (issue 11), one diagnostic per chunk.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @band(%b: !tile.tensor<?x?xbf16>) {
  %rb = hopper.smem_alloc offset 0 : !hopper.smem<2x8x64xbf16, swizzle 128>
  %full = hopper.mbarrier_alloc offset 4096 : !hopper.mbarriers<2>
  %c0 = arith.constant 0 : index
  %rank = hopper.cluster_ctarank
  hopper.tma_load_multicast %b[%c0, %c0], %rb[%c0], %full, rank %rank of 2 : !tile.tensor<?x?xbf16>, !hopper.smem<2x8x64xbf16, swizzle 128>, !hopper.mbarriers<2>
// CHECK:      {{.*}}hopper-cluster-invalid.mlir:[[# @LINE - 1]]:3: error: hopper.tma_load_multicast: 8 rows do not split into 2 bands of a multiple of 8 rows (a band starts on a 1024-byte swizzle pattern)
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @rank1(%b: !tile.tensor<?xbf16>) {
  %rb = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 128>
  %full = hopper.mbarrier_alloc offset 65536 : !hopper.mbarriers<2>
  %c0 = arith.constant 0 : index
  hopper.tma_load_multicast %b[%c0], %rb[%c0], %full, rank %c0 of 2 : !tile.tensor<?xbf16>, !hopper.smem<2x128x64xbf16, swizzle 128>, !hopper.mbarriers<2>
// CHECK:      {{.*}}hopper-cluster-invalid.mlir:[[# @LINE - 1]]:3: error: hopper.tma_load_multicast: only 2-d tiles of tensors of rank 2 or more
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @shape(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<cluster = [2, 2]>} {
// CHECK: error: #tawac.schedule: cluster [2, 2] is not one of [1, 1], [2, 1], [1, 2]
  tile.return
}

// -----

tile.kernel @alone(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<arefs = [a: depth 2 multicast [0]]>} {
// CHECK: error: #tawac.schedule: a multicast payload needs a cluster of more than one CTA
  tile.return
}

// -----

tile.kernel @dims(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<cluster = [2]>} {
// CHECK: hopper-cluster-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: expected a cluster shape [cx, cy]
  tile.return
}
