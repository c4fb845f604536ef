// The passes on the attention kernel (examples/attention.mlir), the same ones as GEMM.
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{stages=2 mma-depth=0 persistent=false coarse-pipeline=false},pipeline' | filecheck %s --check-prefix=WS
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{stages=2 mma-depth=0 consumer-warp-groups=2 persistent=false coarse-pipeline=false},pipeline,cooperative-consumers,lower-aref' | filecheck %s --check-prefix=LOW
// RUN: tawac opt %S/../../../examples/attention.mlir --emit ptx -p 'warp-specialize,plan{stages=2 mma-depth=0 consumer-warp-groups=2 coarse-pipeline=false},pipeline,persistent,cooperative-consumers,lower-aref,tma-store,convert-to-ptx' | filecheck %s --check-prefix=PTX

// warp-specialize: Q (loaded once), K and V (per key block) are TMA-able MMA operands.
// K and V feed different dots, so each gets its own aref (and K's slot is released as
// soon as S = Q K^T has read it); Q's is written once per program and keeps one slot,
// K's and V's are 2-stage rings.  Each get sits right before the first use of its tile.
// The softmax, both dots and the store stay in the consumer.
// WS:      %aref0 = aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x128xbf16>], 1>
// WS-NEXT: %aref1 = aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x128xbf16>], 2>
// WS-NEXT: %aref2 = aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x128xbf16>], 2>
// WS:      aref.partition producer
// WS:        aref.put %aref0[{{.*}}], %qt
// WS:        scf.for %n = %c0 to %S step %bn {
// WS:          aref.put %aref1[%it], %kt
// WS:          aref.put %aref2[%it_1], %vt
// WS:      aref.partition consumer
// WS-NOT:    tile.load %k
// WS:        %qt_1 = aref.get %aref0
// WS:        scf.for
// WS:          %kt_1 = aref.get %aref1[%[[IK:.*]]]
// WS-NEXT:     %s = tile.dot %qt_1, %kt_1, %s_zero transpose_rhs
// WS-NEXT:     hopper.wgmma_wait %s pending 0
// WS-NEXT:     aref.consumed %aref1[%[[IK]]]
// WS:          tile.reduce max
// WS:          math.exp2
// WS:          tile.reduce sum
// WS:          %vt_1 = aref.get %aref2[%[[IV:.*]]]
// WS-NEXT:     %acc_new = tile.dot %p16, %vt_1, %acc_scaled
// WS-NEXT:     hopper.wgmma_wait %acc_new pending 0
// WS-NEXT:     aref.consumed %aref2[%[[IV]]]
// WS:        aref.consumed %aref0
// WS:        tile.store %out16

// lower-aref: S = Q K^T reads both operands from shared memory (K-major B); P V takes P
// from registers (register-A form) and V as an MN-major B operand.
// LOW: hopper.smem_alloc offset 0 : !hopper.smem<1x128x128xbf16, swizzle 128>
// LOW: hopper.smem_alloc offset {{[0-9]+}} : !hopper.smem<2x128x128xbf16, swizzle 128>
// LOW: hopper.smem_alloc offset {{[0-9]+}} : !hopper.smem<2x128x128xbf16, swizzle 128>
// LOW: %s = hopper.wgmma %qt, %kt, %s_zero : !hopper.smem_tile<128x128xbf16, swizzle 128>, !hopper.smem_tile<128x128xbf16, swizzle 128> -> tensor<128x128xf32>
// LOW: %acc_new = hopper.wgmma %p16, %vt, %acc_scaled transpose_b : tensor<128x128xbf16>, !hopper.smem_tile<128x128xbf16, swizzle 128> -> tensor<128x128xf32>

// convert-to-ptx: 4-d TMA boxes, the zero S accumulator through scale-d false, quad
// shuffles for the row max, and the register-A wgmma with a transposed B.
// PTX: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: setp.ne.s32 [[FALSE:%p[0-9]+]], [[Z:%r[0-9]+]], [[Z]];
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{{.*}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, [[FALSE]], 1, 1, 0, 0;
// PTX: shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 1, 0x1f, 0xffffffff;
// PTX: ex2.approx.ftz.f32
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, %p{{[0-9]+}}, 1, 1, 1;
// The epilogue's O / l with fastmath<arcp>: one rcp.rn per row register, then multiplies.
// PTX-NOT: div.rn.f32
// PTX: rcp.rn.f32
// PTX-NOT: div.rn.f32
// PTX: cp.async.bulk.tensor.4d.global.shared::cta.bulk_group
