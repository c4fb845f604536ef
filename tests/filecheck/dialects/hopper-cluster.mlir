// The hopper ops of thread block clusters (issue 11) print in custom form and re-parse to
// the same text; the schedule records the cluster shape and the multicast payloads.
// RUN: tawac opt %s | tawac opt - | filecheck %s
// RUN: tawac opt %s | filecheck %s

// CHECK-LABEL: tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<arefs = [a_b: depth 2 multicast [1]], cluster = [2, 1]>} {
// CHECK-NEXT:  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 128>
// CHECK-NEXT:  %rb = hopper.smem_alloc offset 32768 : !hopper.smem<2x256x64xbf16, swizzle 128>
// CHECK-NEXT:  %full = hopper.mbarrier_alloc offset 98304 : !hopper.mbarriers<2>
// CHECK-NEXT:  %empty = hopper.mbarrier_alloc offset 98320 : !hopper.mbarriers<2>
// CHECK-NEXT:  hopper.mbarrier_init %full count 1 : !hopper.mbarriers<2>
// CHECK-NEXT:  hopper.mbarrier_init %empty count 8 : !hopper.mbarriers<2>
// CHECK-NEXT:  hopper.cta_sync
// CHECK-NEXT:  hopper.cluster_sync
// CHECK-NEXT:  %rank = hopper.cluster_ctarank
// CHECK-NEXT:  %cid = hopper.cluster_id
// CHECK-NEXT:  %ncl = hopper.num_clusters
// CHECK-NEXT:  %c0 = arith.constant 0 : index
// CHECK-NEXT:  %c1 = arith.constant 1 : index
// CHECK-NEXT:  hopper.mbarrier_wait %empty[%c0], %c1 : !hopper.mbarriers<2>
// CHECK-NEXT:  hopper.mbarrier_wait %full[%c0], %c0 : !hopper.mbarriers<2>
// CHECK-NEXT:  hopper.tma_load_multicast %b[%c0, %c0], %rb[%c0], %full, rank %rank of 2 : !tile.tensor<?x?xbf16>, !hopper.smem<2x256x64xbf16, swizzle 128>, !hopper.mbarriers<2>
// CHECK-NEXT:  hopper.mbarrier_arrive_remote %empty[%c0], cta %c1 : !hopper.mbarriers<2>
// CHECK-NEXT:  hopper.cluster_sync
// CHECK-NEXT:  tile.return
tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<cluster = [2, 1], arefs = [a_b: depth 2 lag 0 multicast [1]]>} {
  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 128>
  %rb = hopper.smem_alloc offset 32768 : !hopper.smem<2x256x64xbf16, swizzle 128>
  %full = hopper.mbarrier_alloc offset 98304 : !hopper.mbarriers<2>
  %empty = hopper.mbarrier_alloc offset 98320 : !hopper.mbarriers<2>
  hopper.mbarrier_init %full count 1 : !hopper.mbarriers<2>
  hopper.mbarrier_init %empty count 8 : !hopper.mbarriers<2>
  hopper.cta_sync
  hopper.cluster_sync
  %rank = hopper.cluster_ctarank
  %cid = hopper.cluster_id
  %ncl = hopper.num_clusters
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  hopper.mbarrier_wait %empty[%c0], %c1 : !hopper.mbarriers<2>
  hopper.mbarrier_wait %full[%c0], %c0 : !hopper.mbarriers<2>
  hopper.tma_load_multicast %b[%c0, %c0], %rb[%c0], %full, rank %rank of 2 : !tile.tensor<?x?xbf16>, !hopper.smem<2x256x64xbf16, swizzle 128>, !hopper.mbarriers<2>
  hopper.mbarrier_arrive_remote %empty[%c0], cta %c1 : !hopper.mbarriers<2>
  hopper.cluster_sync
  tile.return
}
