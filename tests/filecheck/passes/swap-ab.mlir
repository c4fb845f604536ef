// swap-ab: the GEMM tile computed transposed (C^T = B A^T): the dot's operands swapped
// (B's tile is the MMA's M, the 16-token tile its N), the accumulator, its zero and the
// epilogue's conversion transposed, the store marked `transposed`; the decision recorded
// for explain. The PTX has m64n16 wgmmas, the tile written from registers by predicated
// 2-byte stores (no TMA store, no staging tile). What it cannot swap is one located error.
// RUN: tawac opt %S/../../../examples/gemm.mlir -D BLOCK_M=16 -D BLOCK_N=64 -D BLOCK_K=128 -p swap-ab | filecheck %s
// RUN: tawac compile %S/../../../examples/gemm.mlir -D BLOCK_M=16 -D BLOCK_N=64 -D BLOCK_K=128 --swap-ab -o %t.ptx && filecheck %s --check-prefix=PTX < %t.ptx
// RUN: tawac explain %S/../../../examples/gemm.mlir -D BLOCK_M=16 -D BLOCK_N=64 --swap-ab | filecheck %s --check-prefix=EXPLAIN
// RUN: not tawac compile %S/../../../examples/gemm_bias.mlir --swap-ab -o %t2.ptx 2>&1 | filecheck %s --check-prefix=BIAS
// RUN: not tawac compile %S/../../../examples/attention.mlir --swap-ab -o %t3.ptx 2>&1 | filecheck %s --check-prefix=TWO
// RUN: not tawac compile %S/../../../examples/gemm.mlir --swap-ab --split-k 2 -o %t4.ptx 2>&1 | filecheck %s --check-prefix=SPLIT

// CHECK:      tawac.decomposition = {kind = "swap_ab"}
// CHECK:      %zero = arith.constant dense<0.000000e+00> : tensor<64x16xf32>
// CHECK:      scf.for {{.*}} iter_args(%acc_i = %zero) -> (tensor<64x16xf32>)
// CHECK:        %x = tile.load %a[%m0, %k] {{.*}} -> tensor<16x128xbf16>
// CHECK:        %y = tile.load %b[%n0, %k] {{.*}} -> tensor<64x128xbf16>
// CHECK:        %d = tile.dot %y, %x, %acc_i transpose_rhs : tensor<64x128xbf16>, tensor<16x128xbf16> -> tensor<64x16xf32>
// CHECK:      %o = arith.truncf %acc : tensor<64x16xf32> to tensor<64x16xbf16>
// CHECK:      tile.store %o, %c[%m0, %n0] transposed : tensor<64x16xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>

// PTX:        wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16
// PTX-NOT:    cp.async.bulk.tensor.2d.global.shared
// PTX:        @{{%p[0-9]+}} st.global.b16 [{{%rd[0-9]+}}], {{%h[0-9]+}};

// EXPLAIN:    store c: straight from registers
// EXPLAIN:    decomposition: swap-AB: each tile computed transposed (C^T = B A^T)

// BIAS:       gemm_bias.mlir:{{[0-9]+}}:{{[0-9]+}}: error: swap-ab: handles an epilogue of elementwise ops on the accumulator and splat constants only
// TWO:        error: swap-ab: needs exactly one tile.dot, the kernel has 2
// SPLIT:      gemm.mlir:{{[0-9]+}}:{{[0-9]+}}: error: split-k: the tile is computed transposed (swap-ab)
