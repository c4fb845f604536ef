// persistent: each partition loops over tiles t = cta_id, cta_id + num_ctas, ...
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{stages=3 mma-depth=0 group-m=8 coarse-pipeline=false},pipeline,persistent' | filecheck %s --check-prefix=GEMM
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{stages=2 mma-depth=0 coarse-pipeline=false},pipeline,persistent' | filecheck %s --check-prefix=ALONGX
// RUN: tawac opt %S/../../../examples/attention_causal.mlir -p 'warp-specialize,plan{stages=2 mma-depth=0 coarse-pipeline=false},pipeline,persistent' | filecheck %s --check-prefix=CAUSAL
// RUN: tawac opt %S/../../../examples/attention_causal.mlir -p 'warp-specialize,plan{stages=2 mma-depth=0 tile-prefetch=false coarse-pipeline=false},pipeline,persistent' | filecheck %s --check-prefix=NOPREFETCH

// For GEMM, a grouped tile order (group-m values of x share y); the K-loop rings keep their
// depth and no aref is written once per tile.
// GEMM:      %aref0 = aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
// GEMM:      aref.partition consumer
// GEMM:        scf.for %tile_1 = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%count_1 = %{{.*}}, %base_1 = %{{.*}})
// GEMM-NOT:      arith.select
// GEMM:          %[[GM:.*]] = arith.constant 8 : index
// GEMM:          arith.minui {{.*}}, %[[GM]]
// GEMM:          %pid_x_1 = arith.addi

// Attention (not causal): the key loop streams K and V at [b, h, n, 0], no program id
// x, so every query block of a head streams the same K/V: the whole x axis is one group
// (`tiles = grouped 0`), x fastest; the group's size is gx itself, not a constant.
// ALONGX:      aref.partition consumer
// ALONGX:        scf.for %tile_1 = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// ALONGX:          %[[GXY:.*]] = arith.muli %[[GX:.*]], %[[GY:.*]] : index
// ALONGX-NEXT:     %pid_z_1 = arith.divui %tile_1, %[[GXY]] : index
// ALONGX-NEXT:     %[[R:.*]] = arith.remui %tile_1, %[[GXY]] : index
// ALONGX:          arith.minui %{{.*}}, %[[GX]] : index
// ALONGX-NOT:      arith.constant 8 : index
// ALONGX:          %pid_x_1 = arith.addi

// Causal attention: Q is written once per tile and gets a second slot (the next tile's
// Q loads while this one runs); the key loop's bound follows program id x, so tiles go
// longest first: heads in groups of ceil(2 * num_ctas / gx), x descending within a
// group, and a snake over rounds of num_ctas tiles (odd rounds reversed).
// CAUSAL:      %aref0 = aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x128xbf16>], 2>
// CAUSAL:      aref.partition consumer
// CAUSAL:        scf.for %[[T:tile_1]] = %{{.*}} to %{{.*}} step %[[N:.*]] iter_args
// CAUSAL:          %[[NC:.*]] = hopper.num_ctas
// CAUSAL:          %[[RND:.*]] = arith.divui %[[T]], %[[NC]]
// CAUSAL-NEXT:     %[[C:.*]] = arith.remui %[[T]], %[[NC]]
// CAUSAL:          %[[BACK:.*]] = arith.subi %{{.*}}, %[[C]]
// CAUSAL:          %[[PAR:.*]] = arith.remui %[[RND]]
// CAUSAL:          %[[ODD:.*]] = arith.cmpi eq, %[[PAR]]
// CAUSAL-NEXT:     %[[SEL:.*]] = arith.select %[[ODD]], %[[BACK]], %[[C]]
// CAUSAL-NEXT:     %[[POS:.*]] = arith.addi %{{.*}}, %[[SEL]]
// CAUSAL:          %[[TWO:.*]] = arith.muli %[[NC]], %{{.*}}
// CAUSAL-NEXT:     %[[HEADS:.*]] = arith.ceildivui %[[TWO]], %[[GX:.*]] : index
// CAUSAL:          arith.divui %[[POS]], %[[PER:.*]] : index
// CAUSAL:          %[[W:.*]] = arith.remui %[[POS]], %[[PER]]
// CAUSAL-NEXT:     %[[XR:.*]] = arith.divui %[[W]], %[[SZ:.*]] : index
// CAUSAL-NEXT:     arith.remui %[[W]], %[[SZ]]
// CAUSAL:          %[[LAST:.*]] = arith.subi %[[GX]], %{{.*}}
// CAUSAL-NEXT:     %pid_x_1 = arith.subi %[[LAST]], %[[XR]]
// CAUSAL:          aref.get %aref0

// NOPREFETCH:  %aref0 = aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x128xbf16>], 1>
