// Every aref op and type prints in custom form and re-parses to the same text.
// RUN: tawac opt %s | tawac opt - | filecheck %s
// RUN: tawac opt %s | filecheck %s

// CHECK-LABEL: tile.kernel @arefs(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>) {
// CHECK-NEXT:    %r = aref.create : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
// CHECK-NEXT:    %s = aref.create {tag = "single"} : !aref.aref<[tensor<64x64xf16>], 1>
// CHECK-NEXT:    aref.partition producer warp_groups 1 regs 40 {
// CHECK-NEXT:      %c0 = arith.constant 0 : index
// CHECK-NEXT:      %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:      %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<256x64xbf16>
// CHECK-NEXT:      aref.put %r[%c0], %x, %y : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
// CHECK-NEXT:    }
// CHECK-NEXT:    aref.partition consumer warp_groups 2 regs 0 attributes {hint = 1 : i64} {
// CHECK-NEXT:      %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[X:.*]], %[[Y:.*]] = aref.get %r[%[[C0]]] : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
// CHECK-NEXT:      %{{.*}}, %{{.*}} = aref.get %r[%[[C0]]] again : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
// CHECK-NEXT:      %{{.*}} = tile.dot %[[X]], %[[Y]], %[[ZERO]] transpose_rhs : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
// CHECK-NEXT:      aref.consumed %r[%[[C0]]] : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
// CHECK-NEXT:      aref.consumed %r[%[[C0]]] deferred : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
// CHECK-NEXT:    }
// CHECK-NEXT:    aref.partition consumer warp_groups 3 regs 256 {
// CHECK-NEXT:      %{{.*}} = arith.constant 1 : index
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.return
// CHECK-NEXT:  }
tile.kernel @arefs(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
  %s = aref.create {tag = "single"} : !aref.aref<[tensor<64x64xf16>], 1>
  aref.partition producer warp_groups 1 regs 40 {
    %c0 = arith.constant 0 : index
    %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<256x64xbf16>
    aref.put %r[%c0], %x, %y : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
  }
  aref.partition consumer warp_groups 2 regs 0 attributes {hint = 1 : i64} {
    %c0 = arith.constant 0 : index
    %x, %y = aref.get %r[%c0] : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
    %x2, %y2 = aref.get %r[%c0] again : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
    %zero = arith.constant dense<0.0> : tensor<128x256xf32>
    %d = tile.dot %x, %y, %zero transpose_rhs : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    aref.consumed %r[%c0] : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
    aref.consumed %r[%c0] deferred : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 3>
  }
  aref.partition consumer warp_groups 3 regs 256 {
    %c1 = arith.constant 1 : index
  }
  tile.return
}

// Generic form of the aref ops.
// CHECK-LABEL: tile.kernel @generic(%a: !tile.tensor<?x?xf16>) {
// CHECK-NEXT:    %0 = aref.create : !aref.aref<[tensor<64x64xf16>], 2>
// CHECK-NEXT:    aref.partition producer warp_groups 1 regs 24 {
// CHECK-NEXT:      %1 = arith.constant 0 : index
// CHECK-NEXT:      %2 = tile.load %a[%1, %1] : !tile.tensor<?x?xf16> -> tensor<64x64xf16>
// CHECK-NEXT:      aref.put %0[%1], %2 : !aref.aref<[tensor<64x64xf16>], 2>
// CHECK-NEXT:      %3 = aref.get %0[%1] : !aref.aref<[tensor<64x64xf16>], 2>
// CHECK-NEXT:      aref.consumed %0[%1] : !aref.aref<[tensor<64x64xf16>], 2>
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.return
// CHECK-NEXT:  }
"tile.kernel"() <{sym_name = "generic", function_type = (!tile.tensor<?x?xf16>) -> ()}> ({
^bb0(%a: !tile.tensor<?x?xf16>):
  %0 = "aref.create"() : () -> !aref.aref<[tensor<64x64xf16>], 2>
  "aref.partition"() <{role = "producer", warp_groups = #builtin.int<1>, regs = #builtin.int<24>}> ({
    %1 = "arith.constant"() <{value = 0 : index}> : () -> index
    %2 = "tile.load"(%a, %1, %1) : (!tile.tensor<?x?xf16>, index, index) -> tensor<64x64xf16>
    "aref.put"(%0, %1, %2) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (!aref.aref<[tensor<64x64xf16>], 2>, index, tensor<64x64xf16>) -> ()
    %3 = "aref.get"(%0, %1) : (!aref.aref<[tensor<64x64xf16>], 2>, index) -> tensor<64x64xf16>
    "aref.consumed"(%0, %1) : (!aref.aref<[tensor<64x64xf16>], 2>, index) -> ()
  }) : () -> ()
  "tile.return"() : () -> ()
}) : () -> ()

// A predicated put and release (`when`, reuse-slots).
// CHECK-LABEL: tile.kernel @predicated(%a: !tile.tensor<?x?xbf16>) {
// CHECK:         aref.put %r[%c0], %x when %p : !aref.aref<[tensor<64x64xbf16>], 2>
// CHECK:         aref.consumed %r[%{{.*}}] when %{{.*}} : !aref.aref<[tensor<64x64xbf16>], 2>
tile.kernel @predicated(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<64x64xbf16>], 2>
  aref.partition producer warp_groups 1 regs 40 {
    %c0 = arith.constant 0 : index
    %p = arith.constant true
    %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    aref.put %r[%c0], %x when %p : !aref.aref<[tensor<64x64xbf16>], 2>
  }
  aref.partition consumer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %p = arith.constant false
    %x = aref.get %r[%c0] : !aref.aref<[tensor<64x64xbf16>], 2>
    aref.consumed %r[%c0] when %p : !aref.aref<[tensor<64x64xbf16>], 2>
  }
  tile.return
}

// L2 eviction hints on a put and a store (reuse-slots gives them where a resident row
// block can be longer than the ring).
// CHECK-LABEL: tile.kernel @hinted(%a: !tile.tensor<?x?xbf16>) {
// CHECK:         aref.put %r[%c0], %x l2 "evict_last" l2_if %p : !aref.aref<[tensor<64x64xbf16>], 2>
// CHECK:         aref.put %r[%c0], %x when %p l2 "evict_first" : !aref.aref<[tensor<64x64xbf16>], 2>
// CHECK:         tile.store %{{.*}}, %a[%{{.*}}, %{{.*}}] l2 "evict_first" : tensor<64x64xbf16> -> !tile.tensor<?x?xbf16>
tile.kernel @hinted(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<64x64xbf16>], 2>
  aref.partition producer warp_groups 1 regs 40 {
    %c0 = arith.constant 0 : index
    %p = arith.constant true
    %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    aref.put %r[%c0], %x l2 "evict_last" l2_if %p : !aref.aref<[tensor<64x64xbf16>], 2>
    aref.put %r[%c0], %x when %p l2 "evict_first" : !aref.aref<[tensor<64x64xbf16>], 2>
  }
  aref.partition consumer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x = aref.get %r[%c0] : !aref.aref<[tensor<64x64xbf16>], 2>
    aref.consumed %r[%c0] : !aref.aref<[tensor<64x64xbf16>], 2>
    tile.store %x, %a[%c0, %c0] l2 "evict_first" : tensor<64x64xbf16> -> !tile.tensor<?x?xbf16>
  }
  tile.return
}
