// A 2-d tile.load read by consumer math (an epilogue's second matrix: D = A B^T + beta C)
// goes to the producer like an MMA operand: warp-specialize gives it an aref of its own
// (put after the K loop in the producer; get right before the math's first read, consumed
// after it), lower-aref a shared-memory ring, a TMA load and hopper.load_fragment (the
// slot into the accumulator layout's registers), convert-to-ptx a cp.async.bulk.tensor
// and ld.shared per pair of columns.
// RUN: tawac opt --split-input-file -p warp-specialize %s | filecheck %s --check-prefix=WS
// RUN: tawac opt --split-input-file -p 'warp-specialize,plan{stages=2 consumer-warp-groups=2 persistent=false coarse-pipeline=false},pipeline,cooperative-consumers,lower-aref' %s | filecheck %s --check-prefix=LA
// RUN: tawac opt --split-input-file --emit ptx -p 'warp-specialize,plan{stages=2 consumer-warp-groups=2 persistent=false coarse-pipeline=false},pipeline,cooperative-consumers,lower-aref,tma-store,convert-to-ptx' %s | filecheck %s --check-prefix=PTX
// RUN: tawac opt --split-input-file -p 'warp-specialize,plan{consumer-warp-groups=2 persistent=true tile-prefetch=true}' %s | filecheck %s --check-prefix=PLAN

// WS-LABEL: tile.kernel @residual(
// WS-NEXT:    %[[AB:.*]] = aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 1>
// WS-NEXT:    %[[RC:.*]] = aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x128xbf16>], 1>
// WS-NEXT:    aref.partition producer
// WS:           %[[M0:.*]] = arith.muli
// WS-NEXT:      %[[N0:.*]] = arith.muli
// WS:           scf.for
// WS:             aref.put %[[AB]]
// WS-NEXT:      }
// WS-NEXT:      %[[CT:.*]] = tile.load %c[%[[M0]], %[[N0]]] : !tile.tensor<?x?xbf16> -> tensor<128x128xbf16>
// WS-NEXT:      %[[Z:.*]] = arith.constant 0 : index
// WS-NEXT:      aref.put %[[RC]][%[[Z]]], %[[CT]] : !aref.aref<[tensor<128x128xbf16>], 1>
// WS-NEXT:    }
// WS-NEXT:    aref.partition consumer
// WS-NOT:       tile.load
// WS:           %[[ACC:.*]] = scf.for
// WS:           }
// WS-NEXT:      %[[Z2:.*]] = arith.constant 0 : index
// WS-NEXT:      %[[G:.*]] = aref.get %[[RC]][%[[Z2]]] : !aref.aref<[tensor<128x128xbf16>], 1>
// WS-NEXT:      %[[CF:.*]] = arith.extf %[[G]] : tensor<128x128xbf16> to tensor<128x128xf32>
// WS-NEXT:      aref.consumed %[[RC]][%[[Z2]]] : !aref.aref<[tensor<128x128xbf16>], 1>
// WS-NEXT:      %[[SB:.*]] = tile.splat %beta
// WS-NEXT:      %[[CS:.*]] = arith.mulf %[[CF]], %[[SB]]
// WS-NEXT:      arith.addf %[[ACC]], %[[CS]]

// LA-LABEL: tile.kernel @residual(
// LA-SAME:    smem_bytes = 98352
// LA:         %[[RING:.*]] = hopper.smem_alloc offset 65536 : !hopper.smem<1x128x128xbf16, swizzle 128>
// LA-NEXT:    %[[FULL:.*]] = hopper.mbarrier_alloc offset 98336 : !hopper.mbarriers<1>
// LA-NEXT:    %[[EMPTY:.*]] = hopper.mbarrier_alloc offset 98344 : !hopper.mbarriers<1>
// LA:         hopper.mbarrier_init %[[FULL]] count 1 : !hopper.mbarriers<1>
// LA-NEXT:    hopper.mbarrier_init %[[EMPTY]] count 8 : !hopper.mbarriers<1>
// LA-NEXT:    hopper.cta_sync
// LA:         aref.partition producer
// LA:           hopper.mbarrier_wait %[[EMPTY]][%[[PS:.*]]], %{{.*}} : !hopper.mbarriers<1>
// LA-NEXT:      hopper.mbarrier_arrive_expect_tx %[[FULL]][%[[PS]]], 32768 : !hopper.mbarriers<1>
// LA-NEXT:      hopper.tma_load %c[%{{.*}}, %{{.*}}], %[[RING]][%[[PS]]], %[[FULL]] : !tile.tensor<?x?xbf16>, !hopper.smem<1x128x128xbf16, swizzle 128>, !hopper.mbarriers<1>
// LA-NEXT:    }
// LA:         aref.partition consumer
// LA:           hopper.mbarrier_wait %[[FULL]][%[[CS:.*]]], %{{.*}} : !hopper.mbarriers<1>
// LA-NEXT:      %[[VIEW:.*]] = hopper.smem_slot %[[RING]][%[[CS]]] : !hopper.smem<1x128x128xbf16, swizzle 128> -> !hopper.smem_tile<128x128xbf16, swizzle 128>
// LA-NEXT:      %[[REGS:.*]] = hopper.load_fragment %[[VIEW]] : !hopper.smem_tile<128x128xbf16, swizzle 128> -> tensor<128x128xbf16>
// LA-NEXT:      %[[CF:.*]] = arith.extf %[[REGS]] : tensor<128x128xbf16> to tensor<128x128xf32>
// LA:           hopper.mbarrier_arrive %[[EMPTY]][%{{.*}}] : !hopper.mbarriers<1>
// LA-NEXT:      tile.splat %beta
// LA-NOT:     aref.

// PTX-LABEL: .visible .entry residual(
// PTX:         .param .align 64 .b8 c_tmap_64x128[128]
//   The producer: after the K loop's (A and B, also 32 KiB), C's 32 KiB transaction,
//   two 64-column TMA boxes into the C ring.
// PTX:         mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], 32768;
// PTX:         mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], 32768;
// PTX-NEXT:    mov.b64 %[[MAP:rd[0-9]+]], c_tmap_64x128;
// PTX-NEXT:    cvta.param.u64 %[[TMAP:rd[0-9]+]], %[[MAP]];
// PTX-COUNT-2: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r{{[0-9]+}}], [%[[TMAP]], {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
//   The consumers: wait for the slot, 32 ld.shared.b32 per thread (128 x 128 / 256 / 2),
//   each split into its two bf16 halves, a warp barrier, the conversions, the release.
// PTX:         mbarrier.try_wait.parity.shared::cta.b64
// PTX:         ld.shared.b32 %[[P0:r[0-9]+]], [%r{{[0-9]+}}];
// PTX-NEXT:    mov.b32 {%h0, %h1}, %[[P0]];
// PTX-COUNT-31: ld.shared.b32
// PTX-NOT:     ld.shared
// PTX:         bar.warp.sync -1;
// PTX-NEXT:    cvt.f32.bf16 %f{{[0-9]+}}, %h0;
// PTX:         @%p{{[0-9]+}} mbarrier.arrive.shared::cta.b64 _, [%r{{[0-9]+}}];
// PTX-NOT:     ld.shared
// PTX:         st.shared.b32

//   Persistent: the C aref is written once per tile, so it gets a second slot (the
//   producer loads tile t+1's C while the consumers finish tile t) when shared memory
//   allows, as attention's Q does.
// PLAN-LABEL: tile.kernel @residual(
// PLAN-SAME:    arefs = [a_b: depth 4, c: depth 2]
tile.kernel @residual(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>, %d: !tile.tensor<?x?xbf16>, %beta: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %p = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %p : tensor<128x128xf32>
  }
  %ct = tile.load %c[%m0, %n0] : !tile.tensor<?x?xbf16> -> tensor<128x128xbf16>
  %cf = arith.extf %ct : tensor<128x128xbf16> to tensor<128x128xf32>
  %sb = tile.splat %beta : f32 -> tensor<128x128xf32>
  %cs = arith.mulf %cf, %sb : tensor<128x128xf32>
  %r = arith.addf %acc, %cs : tensor<128x128xf32>
  %o = arith.truncf %r : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %d[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}

// -----

// An f32 residual: 32-column TMA boxes (128 bytes of f32), one ld.shared.v2.f32 per pair
// of columns, the thread's granule (t / 2) XORed into its swizzle key.
// WS-LABEL: tile.kernel @residual_f32(
// WS:         %[[RC:.*]] = aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x128xf32>], 1>
// WS:           aref.put %[[RC]]
// WS:           %[[G:.*]] = aref.get %[[RC]]
// WS-NEXT:      arith.addf %{{.*}}, %[[G]] : tensor<128x128xf32>
// WS-NEXT:      aref.consumed %[[RC]]

// LA-LABEL: tile.kernel @residual_f32(
// LA:         hopper.smem_alloc offset 65536 : !hopper.smem<1x128x128xf32, swizzle 128>
// LA:           hopper.mbarrier_arrive_expect_tx %{{.*}}, 65536 : !hopper.mbarriers<1>
// LA:           hopper.load_fragment %{{.*}} : !hopper.smem_tile<128x128xf32, swizzle 128> -> tensor<128x128xf32>

// PTX-LABEL: .visible .entry residual_f32(
// PTX:         .param .align 64 .b8 c_tmap_32x128[128]
// PTX:         mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], 65536;
// PTX-COUNT-4: cp.async.bulk.tensor.2d
// PTX:         xor.b32
// PTX:         ld.shared.v2.f32 {%f{{[0-9]+}}, %f{{[0-9]+}}}, [%r{{[0-9]+}}];
// PTX-COUNT-31: ld.shared.v2.f32
// PTX-NOT:     ld.shared
// PTX:         bar.warp.sync -1;
tile.kernel @residual_f32(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>, %d: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %p = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %p : tensor<128x128xf32>
  }
  %ct = tile.load %c[%m0, %n0] : !tile.tensor<?x?xf32> -> tensor<128x128xf32>
  %r = arith.addf %acc, %ct : tensor<128x128xf32>
  %o = arith.truncf %r : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %d[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
