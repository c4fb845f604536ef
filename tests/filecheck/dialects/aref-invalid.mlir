// Verifier and parser errors of the aref dialect, one diagnostic per chunk.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

// A put whose value has another type than the payload (custom form: the parser
// resolves the value against the payload type).
tile.kernel @put_type(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<256x64xbf16>], 2>
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  aref.put %r[%c0], %x : !aref.aref<[tensor<256x64xbf16>], 2>
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:21: error: operand is used with type tensor<256x64xbf16>, but has been previously used or defined with type tensor<128x64xbf16>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

// The same in generic form reaches the verifier.
tile.kernel @put_type_generic(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<256x64xbf16>, tensor<128x64xbf16>], 2>
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  "aref.put"(%r, %c0, %x, %x) <{operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>}> : (!aref.aref<[tensor<256x64xbf16>, tensor<128x64xbf16>], 2>, index, tensor<128x64xbf16>, tensor<128x64xbf16>) -> ()
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:3: error: aref.put: values (tensor<128x64xbf16>, tensor<128x64xbf16>) do not match the payload of !aref.aref<[tensor<256x64xbf16>, tensor<128x64xbf16>], 2>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

// Too few values for the payload (the location is checked in
// tests/filecheck/bugs/parse-error-location.mlir).
tile.kernel @put_count(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 2>
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  aref.put %r[%c0], %x : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 2>
  tile.return
}
// CHECK:      {{.*}}aref-invalid.mlir:{{[0-9]+}}:{{[0-9]+}}: error: aref.put: 1 values do not match !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 2>
// CHECK-NEXT: {{^//}} -----

// -----

tile.kernel @get_types(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>], 2>
  %c0 = arith.constant 0 : index
  %x = "aref.get"(%r, %c0) : (!aref.aref<[tensor<128x64xbf16>], 2>, index) -> tensor<64x64xbf16>
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:8: error: aref.get: result types do not match the payload of !aref.aref<[tensor<128x64xbf16>], 2>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @two_indices(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>], 2>
  %c0 = arith.constant 0 : index
  %x = aref.get %r[%c0, %c0] : !aref.aref<[tensor<128x64xbf16>], 2>
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:30: error: expected one iteration index
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @consumed_not_aref(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %t = arith.constant dense<0.0> : tensor<128x64xbf16>
  "aref.consumed"(%t, %c0) : (tensor<128x64xbf16>, index) -> ()
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:3: error: operand 'aref' at position 0 does not verify
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @bad_role(%a: !tile.tensor<?x?xbf16>) {
  aref.partition spectator warp_groups 1 regs 0 {
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:18: error: expected a role (producer, consumer)
// CHECK-NEXT: {{^//}} -----
    %c0 = arith.constant 0 : index
  }
  tile.return
}

// -----

tile.kernel @bad_role_generic(%a: !tile.tensor<?x?xbf16>) {
  "aref.partition"() <{role = "spectator", warp_groups = #builtin.int<1>, regs = #builtin.int<0>}> ({
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:3: error: aref.partition: unknown role 'spectator'
// CHECK-NEXT: {{^//}} -----
    %c0 = arith.constant 0 : index
  }) : () -> ()
  tile.return
}

// -----

tile.kernel @regs_not_multiple_of_8(%a: !tile.tensor<?x?xbf16>) {
  aref.partition consumer warp_groups 1 regs 100 {
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:3: error: aref.partition: register budget 100 must be 0 or a multiple of 8 in 24..256
// CHECK-NEXT: {{^//}} -----
    %c0 = arith.constant 0 : index
  }
  tile.return
}

// -----

tile.kernel @regs_too_many(%a: !tile.tensor<?x?xbf16>) {
  aref.partition consumer warp_groups 1 regs 264 {
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:3: error: aref.partition: register budget 264 must be 0 or a multiple of 8 in 24..256
// CHECK-NEXT: {{^//}} -----
    %c0 = arith.constant 0 : index
  }
  tile.return
}

// -----

tile.kernel @regs_too_few(%a: !tile.tensor<?x?xbf16>) {
  aref.partition producer warp_groups 1 regs 16 {
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:3: error: aref.partition: register budget 16 must be 0 or a multiple of 8 in 24..256
// CHECK-NEXT: {{^//}} -----
    %c0 = arith.constant 0 : index
  }
  tile.return
}

// -----

tile.kernel @zero_warp_groups(%a: !tile.tensor<?x?xbf16>) {
  aref.partition consumer warp_groups 0 regs 0 {
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:3: error: aref.partition: warp_groups must be >= 1
// CHECK-NEXT: {{^//}} -----
    %c0 = arith.constant 0 : index
  }
  tile.return
}

// -----

tile.kernel @negative_regs(%a: !tile.tensor<?x?xbf16>) {
  aref.partition consumer warp_groups 1 regs -8 {
// CHECK:      {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:46: error: Expected integer literal
// CHECK-NEXT: {{^//}} -----
    %c0 = arith.constant 0 : index
  }
  tile.return
}

// -----

// Type verifiers: the location is checked in tests/filecheck/bugs/type-error-location.mlir.
tile.kernel @depth_zero(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>], 0>
  tile.return
}
// CHECK:      {{.*}}aref-invalid.mlir{{(:[0-9]+:[0-9]+)?}}: error: !aref.aref depth must be >= 1, got 0
// CHECK-NEXT: {{^//}} -----

// -----

tile.kernel @empty_payload(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[], 2>
  tile.return
}
// CHECK:      {{.*}}aref-invalid.mlir{{(:[0-9]+:[0-9]+)?}}: error: !aref.aref payload must not be empty
// CHECK-NEXT: {{^//}} -----

// -----

tile.kernel @negative_depth(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>], -1>
// CHECK: {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:56: error: Expected integer literal
  tile.return
}

// -----

// A release's predicate is an i1.
tile.kernel @when_not_i1(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>], 2>
  %c0 = arith.constant 0 : index
  aref.consumed %r[%c0] when %c0 : !aref.aref<[tensor<128x64xbf16>], 2>
// CHECK: {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: {{.*}}i1
  tile.return
}

// -----

// An L2 hint names an eviction priority a load or store may carry.
tile.kernel @l2_unknown(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>], 2>
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  aref.put %r[%c0], %x l2 "evict_normal" : !aref.aref<[tensor<128x64xbf16>], 2>
// CHECK: {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: aref.put: l2 is one of evict_first, evict_last, got 'evict_normal'
  tile.return
}

// -----

tile.kernel @l2_unknown_store(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  tile.store %x, %a[%c0, %c0] l2 "keep" : tensor<128x64xbf16> -> !tile.tensor<?x?xbf16>
// CHECK: {{.*}}aref-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: tile.store: l2 is one of evict_first, evict_last, got 'keep'
  tile.return
}
