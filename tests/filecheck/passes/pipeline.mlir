// pipeline{stages=D mma-depth=P}: D-slot arefs; a loop-carried dot becomes asynchronous
// (wgmma_wait pending P), releasing the slot of iteration it - P once it >= P, with a
// final wgmma_wait pending 0 after the loop.  The input is warp-specialize's output.
// RUN: tawac opt --split-input-file -p 'plan{stages=4 mma-depth=2 persistent=false coarse-pipeline=false},pipeline' %s | filecheck %s
// RUN: tawac opt --split-input-file -p 'plan{stages=3 mma-depth=0 persistent=false coarse-pipeline=false},pipeline' %s | filecheck %s --check-prefix=P0
// RUN: not tawac opt -p 'plan{stages=2 mma-depth=2 persistent=false coarse-pipeline=false},pipeline' %s 2>&1 | filecheck %s --check-prefix=DEADLOCK
// RUN: not tawac opt -p 'plan{stages=9 mma-depth=8 persistent=false coarse-pipeline=false},pipeline' %s 2>&1 | filecheck %s --check-prefix=TOO-DEEP

// DEADLOCK: error: pipeline: mma-depth must satisfy 0 <= mma-depth < stages and <= 7 (got mma-depth=2, stages=2); otherwise the producer waits for a slot the consumer cannot release yet
// DEADLOCK-NOT: error
// TOO-DEEP: error: pipeline: mma-depth must satisfy 0 <= mma-depth < stages and <= 7 (got mma-depth=8, stages=9)

// CHECK-LABEL: tile.kernel @gemm(
// CHECK-NEXT:    %[[R:.*]] = aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 4>
// CHECK:         aref.put %[[R]][%{{.*}}], %{{.*}}, %{{.*}} : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 4>
// CHECK:         aref.partition consumer
// CHECK:           %[[ACC:.*]] = scf.for %{{.*}} iter_args(%[[ACCI:.*]] = %{{.*}}) -> (tensor<128x128xf32>) {
// CHECK-NEXT:        %[[IT:.*]] = arith.divui
// CHECK-NEXT:        %[[X:.*]], %[[Y:.*]] = aref.get %[[R]][%[[IT]]] : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 4>
// CHECK-NEXT:        %[[D:.*]] = tile.dot %[[X]], %[[Y]], %[[ACCI]] transpose_rhs
// CHECK-NEXT:        %[[W:.*]] = hopper.wgmma_wait %[[D]] pending 2 : tensor<128x128xf32>
// CHECK-NEXT:        %[[P:.*]] = arith.constant 2 : index
// CHECK-NEXT:        %[[OK:.*]] = arith.cmpi uge, %[[IT]], %[[P]] : index
// CHECK-NEXT:        scf.if %[[OK]] {
// CHECK-NEXT:          %[[PREV:.*]] = arith.subi %[[IT]], %[[P]] : index
// CHECK-NEXT:          aref.consumed %[[R]][%[[PREV]]] deferred : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 4>
// CHECK-NEXT:        }
// CHECK-NEXT:        scf.yield %[[W]] : tensor<128x128xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[FINAL:.*]] = hopper.wgmma_wait %[[ACC]] pending 0 : tensor<128x128xf32>
// CHECK-NEXT:      %{{.*}} = arith.truncf %[[FINAL]]
// CHECK-NOT:       aref.consumed

// mma-depth=0: the dot is waited for at once and the slot released in place.
// P0-LABEL: tile.kernel @gemm(
// P0:         aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 3>
// P0:         aref.partition consumer
// P0:           %[[ACC:.*]] = scf.for
// P0:             %[[IT:.*]] = arith.divui
// P0-NEXT:        %[[X:.*]], %[[Y:.*]] = aref.get %[[R:.*]][%[[IT]]]
// P0-NEXT:        %[[D:.*]] = tile.dot %[[X]], %[[Y]]
// P0-NEXT:        %[[W:.*]] = hopper.wgmma_wait %[[D]] pending 0 : tensor<128x128xf32>
// P0-NEXT:        aref.consumed %[[R]][%[[IT]]]
// P0-NEXT:        scf.yield %[[W]] : tensor<128x128xf32>
// P0-NEXT:      }
// P0-NEXT:      %{{.*}} = arith.truncf %[[ACC]]
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 1>
  aref.partition producer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
    scf.for %k = %c0 to %K step %c64 {
      %x = tile.load %a[%c0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
      %y = tile.load %b[%c0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
      %it = arith.divui %k, %c64 : index
      aref.put %r[%it], %x, %y : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 1>
    }
  }
  aref.partition consumer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
    %zero = arith.constant dense<0.0> : tensor<128x128xf32>
    %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
      %it = arith.divui %k, %c64 : index
      %x, %y = aref.get %r[%it] : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 1>
      %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
      aref.consumed %r[%it] : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 1>
      scf.yield %d : tensor<128x128xf32>
    }
    %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
    tile.store %o, %c[%c0, %c0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  }
  tile.return
}

// -----

// A dot outside a loop is waited for right after it, whatever mma-depth is; an aref
// written once per program keeps a single slot.
// CHECK-LABEL: tile.kernel @single(
// CHECK:         aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<64x64xbf16>, tensor<64x64xbf16>], 1>
// CHECK:         %[[D:.*]] = tile.dot
// CHECK-NEXT:    %[[W:.*]] = hopper.wgmma_wait %[[D]] pending 0 : tensor<64x64xf32>
// CHECK-NEXT:    aref.consumed
// CHECK-NEXT:    tile.store %[[W]]
// P0-LABEL: tile.kernel @single(
// P0:         %[[D:.*]] = tile.dot
// P0-NEXT:    %[[W:.*]] = hopper.wgmma_wait %[[D]] pending 0 : tensor<64x64xf32>
// P0-NEXT:    aref.consumed
// P0-NEXT:    tile.store %[[W]]
tile.kernel @single(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %r = aref.create : !aref.aref<[tensor<64x64xbf16>, tensor<64x64xbf16>], 1>
  aref.partition producer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    aref.put %r[%c0], %x, %y : !aref.aref<[tensor<64x64xbf16>, tensor<64x64xbf16>], 1>
  }
  aref.partition consumer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x, %y = aref.get %r[%c0] : !aref.aref<[tensor<64x64xbf16>, tensor<64x64xbf16>], 1>
    %zero = arith.constant dense<0.0> : tensor<64x64xf32>
    %d = tile.dot %x, %y, %zero transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    aref.consumed %r[%c0] : !aref.aref<[tensor<64x64xbf16>, tensor<64x64xbf16>], 1>
    tile.store %d, %c[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  }
  tile.return
}
