// Regressions (issue 7): malformed input found by fuzzing that crashed the compiler with
// an internal error. Each now gets one located diagnostic from the parser or verifier.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

// A value used before its definition in the same block (xDSL accepts the forward
// reference; the backend then failed with "m0 is not a scalar", without a location).
tile.kernel @use_before_def(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = arith.addi %m0, %c0 : index
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:8: error: %m0 is used before its definition (defined at {{.*}}malformed-input.mlir:[[# @LINE + 1]]:9)
  %m0 = arith.addi %c0, %c0 : index
  tile.return
}

// -----

// An op using its own result.
tile.kernel @self_use(%a: !tile.tensor<?x?xbf16>) {
  %x = arith.addi %x, %x : index
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:8: error: %x is used before its definition
  tile.return
}

// -----

// A value defined in a loop body used after the loop: reported at its use.
tile.kernel @out_of_scope(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %y = arith.addi %i, %c1 : index
  }
  %z = arith.addi %y, %c1 : index
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:8: error: use of undefined value %y
  tile.return
}

// -----

// scf.if with a result and a branch without scf.yield passed verification.
tile.kernel @if_without_yield(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %t = arith.cmpi eq, %c0, %c0 : index
  %r = scf.if %t -> (index) {
    scf.yield %c0 : index
  } else {
  }
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 4]]:8: error: the else branch of scf.if yields 0 value(s) (); the scf.if has 1 result(s) (index)
  tile.return
}

// -----

tile.kernel @if_wrong_yield_type(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %t = arith.cmpi eq, %c0, %c0 : index
  %r = scf.if %t -> (index) {
    scf.yield %t : i1
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:5: error: the then branch of scf.if yields 1 value(s) (i1); the scf.if has 1 result(s) (index)
  } else {
    scf.yield %c0 : index
  }
  tile.return
}

// -----

// An index constant past the 64-bit range was accepted and failed in the backend.
tile.kernel @index_range(%a: !tile.tensor<?x?xbf16>) {
  %c = arith.constant 99999999999999999999 : index
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:8: error: index constant 99999999999999999999 does not fit in 64 bits
  tile.return
}

// -----

// A float constant past its type's range.
tile.kernel @float_range(%a: !tile.tensor<?x?xbf16>) {
  %c = arith.constant 1.0e39 : f32
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:23: error: value out of range for its type
  tile.return
}

// -----

// A dense f32 constant out of range: OverflowError while packing.
tile.kernel @dense_range(%a: !tile.tensor<?x?xbf16>) {
  %z = arith.constant dense<1.0e39> : tensor<128x128xf32>
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:23: error: value out of range for its type
  tile.return
}

// -----

// A huge splat was expanded element by element: MemoryError after 33 s and 6 GB.
tile.kernel @huge_tile(%a: !tile.tensor<?x?xbf16>) {
  %z = arith.constant dense<0.0> : tensor<1048576x65536xf32>
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:36: error: tensor<1048576x65536xf32> has 68719476736 elements; a tile holds at most 1048576 (it lives in one CTA's registers and shared memory)
  tile.return
}

// -----

// A dimension of 2^63-1: OverflowError.
tile.kernel @huge_dim(%a: !tile.tensor<?x?xbf16>) {
  %z = arith.constant dense<0.0> : tensor<128x9223372036854775807xf32>
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:36: error: dimension larger than 2147483647 in tensor<128x9223372036854775807xf32>
  tile.return
}

// -----

// An integer literal past Python's 4,300-digit conversion limit: ValueError.
tile.kernel @long_literal(%a: !tile.tensor<?x?xbf16>) {
  %c = arith.constant 1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000 : index
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:23: error: number literal of 106 characters (at most 100)
  tile.return
}

// -----

// A value used in a loop body and defined after the loop: the parser's forward reference
// stayed in the IR ("Forward declared values do not have an owner").
tile.kernel @forward_into_region(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %y = arith.addi %i, %late : index
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:10: error: %late is used before its definition
  }
  %late = arith.constant 3 : index
  tile.return
}

// -----

// arith.extf to a narrower type printed a cvt without rounding mode: invalid PTX.
tile.kernel @extf_narrows(%a: !tile.tensor<?x?xbf16>) {
  %z = arith.constant dense<0.0> : tensor<128x128xf32>
  %o = arith.extf %z : tensor<128x128xf32> to tensor<128x128xbf16>
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:8: error: arith.extf must widen its element type, got tensor<128x128xf32> to tensor<128x128xbf16>
  tile.return
}

// -----

// A program id axis past z in the generic form crashed the lowering (IndexError); the
// printer of the custom form crashed the same way.
"tile.kernel"() <{sym_name = "axis", function_type = () -> ()}> ({
  %0 = "tile.program_id"() <{axis = #builtin.int<224>}> : () -> index
// CHECK: {{.*}}malformed-input.mlir:[[# @LINE - 1]]:8: error: tile.program_id axis must be 0, 1 or 2 (x, y, z), got 224
  "tile.return"() : () -> ()
}) : () -> ()
