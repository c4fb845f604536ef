// The planner decides the whole #tawac.schedule once (plan); each pass after it applies
// its part, and the passes that lay out shared memory record its size.
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic}' | filecheck %s --check-prefix=PLAN
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=3 mma-depth=1 persistent=false coarse-pipeline=false},pipeline' | filecheck %s --check-prefix=PIPE
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=2 mma-depth=0 coarse-pipeline=false},pipeline,persistent' | filecheck %s --check-prefix=PERS
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=2 group-m=4},pipeline,persistent' | filecheck %s --check-prefix=GROUP4
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic persistent=false},pipeline,persistent' | filecheck %s --check-prefix=PLAIN
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=3 mma-depth=0 consumer-warp-groups=1 persistent=false coarse-pipeline=false},pipeline,cooperative-consumers' | filecheck %s --check-prefix=ROLES
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=3 mma-depth=0 consumer-warp-groups=2 persistent=false coarse-pipeline=false},pipeline,cooperative-consumers,lower-aref' | filecheck %s --check-prefix=AREF
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=3 mma-depth=0 consumer-warp-groups=2 persistent=false coarse-pipeline=false},pipeline,cooperative-consumers,lower-aref,tma-store' | filecheck %s --check-prefix=STORE
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=3 mma-depth=0 consumer-warp-groups=2 persistent=false coarse-pipeline=false tma-store=false},pipeline,cooperative-consumers,lower-aref,tma-store' | filecheck %s --check-prefix=NOTMA
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=4 mma-depth=0 consumer-warp-groups=2 coarse-pipeline=false},pipeline,persistent,cooperative-consumers,lower-aref,tma-store' | filecheck %s --check-prefix=CHUNKS
// RUN: tawac opt %s --emit ptx -p 'warp-specialize,plan{schedule=heuristic stages=4 mma-depth=0 consumer-warp-groups=2 coarse-pipeline=false},pipeline,persistent,cooperative-consumers,lower-aref,tma-store,convert-to-ptx' | filecheck %s --check-prefix=CHUNKS-PTX

// The default plan of a 128x256 GEMM: two consumer warp groups at 240 registers, a
// 3-slot ring (the aref named after the tensors it carries tiles of) released at once,
// the K loop in body order (one MMA: nothing to overlap) with the MMA awaited right
// after it, a persistent grid in groups of 8 rows, the epilogue's store to %c through
// one whole staging tile.
// PLAN:  tile.kernel @gemm({{.*}}) attributes {tawac.schedule = #tawac.schedule<planner = heuristic, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [a_b: depth 3], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], tiles = grouped 8, stores = [c: whole], program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, {cdiv = {arg = "c", dim = 1 : i64}, by = 256 : i64}, {const = 1 : i64}]>}

// pipeline applies depth 3 and lag 1: the MMA awaited with one group left in flight
// (the wait the loop schedule lists), the release of iteration it - 1, guarded.
// PIPE:  tile.kernel @gemm({{.*}}) attributes {tawac.schedule = #tawac.schedule<planner = heuristic, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [a_b: depth 3 lag 1], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 1, 2 aref.consumed]], stores = [c: whole]>}
// PIPE:    aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
// PIPE:    hopper.wgmma_wait %{{.*}} pending 1
// PIPE:    aref.consumed %{{.*}}[%{{.*}}] deferred

// persistent applies the tile order: groups of G rows of program id x.
// PERS:  tile.kernel @gemm({{.*}}) attributes {tawac.schedule = #tawac.schedule<planner = heuristic, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [a_b: depth 2], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], tiles = grouped 8, stores = [c: whole], program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, {cdiv = {arg = "c", dim = 1 : i64}, by = 256 : i64}, {const = 1 : i64}]>}
// PERS:    hopper.cta_id
// PERS:    hopper.num_ctas
// PERS:    arith.constant 8 : index
// GROUP4:  tiles = grouped 4
// GROUP4:    hopper.num_ctas
// GROUP4:    arith.constant 4 : index
// A plain grid: persistent has nothing to apply.
// PLAIN:     tile.kernel @gemm
// PLAIN-NOT: tiles =
// PLAIN-NOT: hopper.num_ctas

// cooperative-consumers applies the roles: warp groups and register budgets.
// ROLES:  roles = [producer wg 1 regs 24, consumer wg 1 regs 256]
// ROLES:  aref.partition producer warp_groups 1 regs 24
// ROLES:  aref.partition consumer warp_groups 1 regs 256

// Rings: 3 x (16 KiB + 32 KiB) + 48 bytes of mbarriers.
// AREF:  tile.kernel @gemm({{.*}}) attributes {tawac.schedule = #tawac.schedule<planner = heuristic, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [a_b: depth 3], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], stores = [c: whole], smem_bytes = 147504>}
// The 128x256 bf16 staging tile (64 KiB) starts on the next KiB.
// STORE: tile.kernel @gemm({{.*}}) attributes {tawac.schedule = #tawac.schedule<planner = heuristic, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [a_b: depth 3], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], stores = [c: whole], smem_bytes = 214016>}
// Without TMA stores the planner sends the tile out from registers: tma-store places no
// staging tile.
// NOTMA: stores = [c: registers], smem_bytes = 147504>}
// NOTMA-NOT: hopper.store_fragment
// NOTMA: tile.store %o, %c

// Four slots (192 KiB) leave no room for the 64 KiB staging tile: the planner stages the
// epilogue through a ring of two 128x64 chunk buffers (32 KiB) instead, and tma-store
// sends the tile out in four 64-column chunks taking the buffers in turn.
// CHUNKS: arefs = [a_b: depth 4], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], tiles = grouped 8, stores = [c: chunks 2], program_grid = {{.*}}, smem_bytes = 230400>
// CHUNKS: %staging_chunks = hopper.smem_alloc offset 197632 : !hopper.smem<2x128x64xbf16, swizzle 128>
// CHUNKS: %[[B0:.*]] = hopper.smem_slot %staging_chunks[%{{.*}}]
// CHUNKS: %[[B1:.*]] = hopper.smem_slot %staging_chunks[%{{.*}}]
// CHUNKS: hopper.store_fragment %o, %[[B0]] pending 1 : tensor<128x256xbf16>, !hopper.smem_tile<128x64xbf16, swizzle 128>
// CHUNKS-NEXT: hopper.tma_store %[[B0]], %c[%[[M:.*]], %[[N:.*]]] :
// CHUNKS-NEXT: hopper.store_fragment %o, %[[B1]] columns 64 pending 1
// CHUNKS: %[[N64:.*]] = arith.addi %[[N]], %{{.*}} : index
// CHUNKS-NEXT: hopper.tma_store %[[B1]], %c[%[[M]], %[[N64]]]
// CHUNKS: hopper.store_fragment %o, %[[B0]] columns 128 pending 1
// CHUNKS: hopper.store_fragment %o, %[[B1]] columns 192 pending 1
// CHUNKS-NOT: hopper.store_fragment
// Each chunk: the leader waits until at most one older bulk store still reads (the other
// buffer's), the warp group writes its 64 rows x 64 columns (16 st.shared.b32 per
// thread), and the leader sends them with one 64x64 box.
// CHUNKS-PTX-COUNT-4: cp.async.bulk.wait_group.read 1;
// CHUNKS-PTX: cp.async.bulk.wait_group.read 0;
// CHUNKS-PTX-NOT: cp.async.bulk.wait_group.read
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<256x64xbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %o = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x256xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
