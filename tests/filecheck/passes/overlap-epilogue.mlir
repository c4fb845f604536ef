// overlap-epilogue: with `overlap` in the schedule, the persistent consumer's tile loop
// carries the tile index, O and l to the next iteration; the epilogue of the previous
// tile (O / l, its conversion and store) runs right after the next tile's first MMA is
// issued and before its wait, guarded by "there was a previous tile" (index < tiles);
// a tile without key blocks runs it at the start of its else branch; the last tile's
// epilogue follows the loop. Without `overlap`, nothing moves; a GEMM (whose first MMA
// is in its K loop) is not planned to overlap, and nothing moves.
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{schedule=heuristic overlap-epilogue=true},pipeline,persistent,coarse-pipeline,overlap-epilogue' | filecheck %s
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{schedule=heuristic},pipeline,persistent,coarse-pipeline,overlap-epilogue' | filecheck %s --check-prefix=OFF
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{schedule=heuristic overlap-epilogue=true},pipeline,persistent,coarse-pipeline,overlap-epilogue' | filecheck %s --check-prefix=GEMM
// RUN: tawac opt %S/../../../examples/attention.mlir --emit ptx -p 'warp-specialize,plan{schedule=heuristic overlap-epilogue=true},pipeline,persistent,coarse-pipeline,overlap-epilogue,cooperative-consumers,lower-aref,tma-store,convert-to-ptx' | filecheck %s --check-prefix=PTX

// CHECK:      tawac.schedule = #tawac.schedule<{{.*}}, overlap,
// CHECK:      aref.partition consumer
// CHECK:      %{{.*}}, %{{.*}}, %[[PREV_OUT:[0-9]+]], %{{.*}}, %{{.*}} = scf.for %tile_1 = %{{[0-9]+}} to %[[TILES:[0-9]+]] step %{{[0-9]+}} iter_args(%count_1 = %{{[0-9]+}}, %base_1 = %{{[0-9]+}}, %[[PREV:[0-9]+]] = %[[TILES]], %[[O:[0-9]+]] = %{{[0-9]+}}, %[[L:[0-9]+]] = %{{[0-9]+}}) -> (index, index, index, tensor<128x128xf32>, tensor<128xf32>)
// CHECK:        %acc, %m_i, %l_i = scf.if
// CHECK:          %s = tile.dot %qt_1, %kt_1
// CHECK-NEXT:     %[[HAD:[0-9]+]] = arith.cmpi ult, %[[PREV]], %[[TILES]] : index
// CHECK-NEXT:     scf.if %[[HAD]] {
// CHECK:            %pid_z_1 = arith.divui %[[PREV]], %{{[0-9]+}} : index
// CHECK:            %l_b = tile.broadcast %[[L]], 0
// CHECK-NEXT:       %out = arith.divf %[[O]], %l_b
// CHECK-NEXT:       %out16 = arith.truncf %out
// CHECK-NEXT:       tile.store %out16, %o[%pid_z_1, %pid_y_1, %m0_1, %c0_2]
// CHECK-NEXT:     }
// CHECK-NEXT:     hopper.wgmma_wait %s pending 0
// CHECK:          scf.yield %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} : tensor<128x128xf32>, tensor<128xf32>, tensor<128xf32>
// CHECK-NEXT:   } else {
// CHECK-NEXT:     arith.cmpi ult, %[[PREV]], %[[TILES]] : index
// CHECK-NEXT:     scf.if
// CHECK:            tile.store
// CHECK:          scf.yield %o_init, %m_init, %l_init
// CHECK-NOT:    tile.store
// CHECK:        scf.yield %{{[0-9]+}}, %{{[0-9]+}}, %tile_1, %acc, %l_i : index, index, index, tensor<128x128xf32>, tensor<128xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[LAST:[0-9]+]] = arith.cmpi ult, %[[PREV_OUT]], %[[TILES]] : index
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK:        tile.store
// CHECK-NOT:  tile.store

// OFF-NOT:    overlap,
// OFF:        %s = tile.dot %qt_1, %kt_1
// OFF-NEXT:   hopper.wgmma_wait %s pending 0
// OFF-COUNT-1: tile.store
// OFF-NOT:    tile.store

// GEMM-NOT:   overlap,
// GEMM-COUNT-1: tile.store
// GEMM-NOT:   tile.store

// The three copies of the store share one staging tile (one TMA store each, 64-column
// chunks: two per warp group), and the first is issued between the first S MMA's commit
// and its wait.
// PTX:      wgmma.commit_group.sync.aligned;
// PTX-NOT:  wgmma.wait_group
// PTX:      cp.async.bulk.tensor.4d.global.shared::cta.bulk_group
// PTX:      wgmma.wait_group.sync.aligned 0;
