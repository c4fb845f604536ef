// warp-specialize: MMA operand loads (and the scalars they need) go to the producer,
// which hands them over with aref.put; everything else goes to the consumer.
// RUN: tawac opt --split-input-file -p warp-specialize %s | filecheck %s

// A 128x128x64 GEMM: one aref carrying both operand tiles.
// CHECK-LABEL: tile.kernel @gemm(
// CHECK-NEXT:    %[[R:.*]] = aref.create "a_b" : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 1>
// CHECK-NEXT:    aref.partition producer warp_groups 1 regs 0 {
//   Scalars and address arithmetic are duplicated into the producer ...
// CHECK-NEXT:      %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT:      %[[C128:.*]] = arith.constant 128 : index
// CHECK-NEXT:      %[[PM:.*]] = tile.program_id x
// CHECK-NEXT:      %[[PN:.*]] = tile.program_id y
// CHECK-NEXT:      %[[M0:.*]] = arith.muli %[[PM]], %[[C128]] : index
// CHECK-NEXT:      %[[N0:.*]] = arith.muli %[[PN]], %[[C128]] : index
// CHECK-NEXT:      %[[K:.*]] = tile.dim %a[1] : !tile.tensor<?x?xbf16>
//   ... the loop loses its iter_args, the loads stay, and one put per iteration sends
//   them, with the iteration number (k - lb) / step.
// CHECK-NEXT:      scf.for %[[KI:.*]] = %[[C0]] to %[[K]] step %[[C64]] {
// CHECK-NEXT:        %[[X:.*]] = tile.load %a[%[[M0]], %[[KI]]] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:        %[[Y:.*]] = tile.load %b[%[[N0]], %[[KI]]] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:        %[[REL:.*]] = arith.subi %[[KI]], %[[C0]] : index
// CHECK-NEXT:        %[[IT:.*]] = arith.divui %[[REL]], %[[C64]] : index
// CHECK-NEXT:        aref.put %[[R]][%[[IT]]], %[[X]], %[[Y]] : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 1>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
//   (The CHECK-NEXT chain above is the whole producer: no dot, math or store in it.)
// CHECK-NEXT:    aref.partition consumer warp_groups 1 regs 0 {
// CHECK-NEXT:      %[[CC0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[CC64:.*]] = arith.constant 64 : index
// CHECK-NEXT:      %[[CC128:.*]] = arith.constant 128 : index
// CHECK-NEXT:      %[[CPM:.*]] = tile.program_id x
// CHECK-NEXT:      %[[CPN:.*]] = tile.program_id y
// CHECK-NEXT:      %[[CM0:.*]] = arith.muli %[[CPM]], %[[CC128]] : index
// CHECK-NEXT:      %[[CN0:.*]] = arith.muli %[[CPN]], %[[CC128]] : index
// CHECK-NEXT:      %[[CK:.*]] = tile.dim %a[1] : !tile.tensor<?x?xbf16>
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
// CHECK-NEXT:      %[[ACC:.*]] = scf.for %[[CKI:.*]] = %[[CC0]] to %[[CK]] step %[[CC64]] iter_args(%[[ACCI:.*]] = %[[ZERO]]) -> (tensor<128x128xf32>) {
// CHECK-NEXT:        %[[CREL:.*]] = arith.subi %[[CKI]], %[[CC0]] : index
// CHECK-NEXT:        %[[CIT:.*]] = arith.divui %[[CREL]], %[[CC64]] : index
// CHECK-NEXT:        %[[GX:.*]], %[[GY:.*]] = aref.get %[[R]][%[[CIT]]] : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 1>
// CHECK-NEXT:        %[[D:.*]] = tile.dot %[[GX]], %[[GY]], %[[ACCI]] transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
// CHECK-NEXT:        aref.consumed %[[R]][%[[CIT]]] : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 1>
// CHECK-NEXT:        scf.yield %[[D]] : tensor<128x128xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[O:.*]] = arith.truncf %[[ACC]] : tensor<128x128xf32> to tensor<128x128xbf16>
// CHECK-NEXT:      tile.store %[[O]], %c[%[[CM0]], %[[CN0]]] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16> {tawac.store = "c"}
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.return
// CHECK-NEXT:  }
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) {
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
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}

// -----

// A fused epilogue: the bias vector load is not an MMA operand, so it stays in the
// consumer with the splat, the broadcast and the elementwise math; the scalar
// argument is used only there.
// CHECK-LABEL: tile.kernel @bias(
// CHECK:         aref.create "a_b" : !aref.aref<[tensor<128x64xf16>, tensor<128x64xf16>], 1>
// CHECK-NEXT:    aref.partition producer warp_groups 1 regs 0 {
// CHECK-NOT:       %bias
// CHECK-NOT:       %alpha
// CHECK-NOT:       tile.splat
// CHECK-NOT:       tile.broadcast
// CHECK:           tile.load %a
// CHECK-NEXT:      tile.load %b
// CHECK-NOT:       tile.load
// CHECK:           aref.put
// CHECK-NOT:       tile.load %bias
// CHECK:         aref.partition consumer warp_groups 1 regs 0 {
// CHECK:           aref.get
// CHECK-NEXT:      tile.dot
// CHECK-NEXT:      aref.consumed
// CHECK:           %[[S:.*]] = tile.splat %alpha : f32 -> tensor<128x128xf32>
// CHECK-NEXT:      %[[SC:.*]] = arith.mulf %{{.*}}, %[[S]] : tensor<128x128xf32>
// CHECK-NEXT:      %[[BV:.*]] = tile.load %bias[%{{.*}}] : !tile.tensor<?xf32> -> tensor<128xf32>
// CHECK-NEXT:      %[[BB:.*]] = tile.broadcast %[[BV]], 1 : tensor<128xf32> -> tensor<128x128xf32>
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[SC]], %[[BB]] : tensor<128x128xf32>
// CHECK-NEXT:      %[[O:.*]] = arith.truncf %[[SUM]] : tensor<128x128xf32> to tensor<128x128xf16>
// CHECK-NEXT:      tile.store %[[O]], %c[
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.return
tile.kernel @bias(%a: !tile.tensor<?x?xf16>, %b: !tile.tensor<?x?xf16>, %bias: !tile.tensor<?xf32>, %c: !tile.tensor<?x?xf16>, %alpha: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf16> -> tensor<128x64xf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf16> -> tensor<128x64xf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xf16>, tensor<128x64xf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %s = tile.splat %alpha : f32 -> tensor<128x128xf32>
  %scaled = arith.mulf %acc, %s : tensor<128x128xf32>
  %bv = tile.load %bias[%n0] : !tile.tensor<?xf32> -> tensor<128xf32>
  %bb = tile.broadcast %bv, 1 : tensor<128xf32> -> tensor<128x128xf32>
  %r = arith.addf %scaled, %bb : tensor<128x128xf32>
  %o = arith.truncf %r : tensor<128x128xf32> to tensor<128x128xf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xf16> -> !tile.tensor<?x?xf16>
  tile.return
}

// -----

// Outside a loop the transfer's iteration number is the constant 0; the consumed
// goes after the last use of the payload (the dot), before the store.
// CHECK-LABEL: tile.kernel @single(
// CHECK:         %[[R:.*]] = aref.create "a_b" : !aref.aref<[tensor<64x64xbf16>, tensor<64x64xbf16>], 1>
// CHECK:         aref.partition producer
// CHECK:           %[[X:.*]] = tile.load %a
// CHECK-NEXT:      %[[Y:.*]] = tile.load %b
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:      aref.put %[[R]][%[[Z]]], %[[X]], %[[Y]]
// CHECK-NEXT:    }
// CHECK-NEXT:    aref.partition consumer
// CHECK:           %[[GX:.*]], %[[GY:.*]] = aref.get %[[R]][%[[Z2:[0-9a-z_]+]]]
// CHECK:           %[[D:.*]] = tile.dot %[[GX]], %[[GY]]
// CHECK-NEXT:      aref.consumed %[[R]][%[[Z2]]]
// CHECK-NEXT:      tile.store %[[D]]
tile.kernel @single(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
  %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = tile.dot %x, %y, %zero transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  tile.store %d, %c[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

// Two key loops one after the other (causal attention's off-diagonal and diagonal
// blocks): the second loop's K reuses the first's ring, its transfers numbered on after
// the first loop's trip count, ceil((ub - lb) / step) clamped at 0.
// CHECK-LABEL: tile.kernel @two_loops(
// CHECK-NEXT:    aref.create "q"
// CHECK-NEXT:    %[[R:.*]] = aref.create "k" : !aref.aref<[tensor<64x64xbf16>], 1>
// CHECK-NOT:     aref.create
// CHECK:         aref.partition producer
// CHECK:         scf.for %[[I:.*]] = %[[LB1:.*]] to %[[UB1:.*]] step %[[S1:.*]] {
// CHECK:           aref.put %[[R]][%{{.*}}]
// CHECK:         scf.for %[[J:.*]] = %[[LB2:.*]] to %{{.*}} step %[[S2:.*]] {
// CHECK:           %[[REL:.*]] = arith.subi %[[J]], %[[LB2]] : index
// CHECK-NEXT:      %[[IT:.*]] = arith.divui %[[REL]], %[[S2]] : index
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[SPAN:.*]] = arith.subi %[[UB1]], %[[LB1]] : index
// CHECK-NEXT:      %[[TRIPS:.*]] = arith.ceildivsi %[[SPAN]], %[[S1]] : index
// CHECK-NEXT:      %[[CLAMP:.*]] = arith.maxsi %[[TRIPS]], %[[ZERO]] : index
// CHECK-NEXT:      %[[IT2:.*]] = arith.addi %[[IT]], %[[CLAMP]] : index
// CHECK-NEXT:      aref.put %[[R]][%[[IT2]]]
// CHECK:         aref.partition consumer
// CHECK:           aref.get %[[R]]
// CHECK:           aref.get %[[R]]
tile.kernel @two_loops(%q: !tile.tensor<?x?xbf16>, %k: !tile.tensor<?x?xbf16>, %o: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %c64 : index
  %end = arith.addi %m0, %c64 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %qt = tile.load %q[%m0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
  %a = scf.for %n = %c0 to %m0 step %c64 iter_args(%acc = %zero) -> (tensor<64x64xf32>) {
    %kt = tile.load %k[%n, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qt, %kt, %acc transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %s : tensor<64x64xf32>
  }
  %b = scf.for %n = %m0 to %end step %c64 iter_args(%acc = %a) -> (tensor<64x64xf32>) {
    %kt = tile.load %k[%n, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qt, %kt, %acc transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %s : tensor<64x64xf32>
  }
  tile.store %b, %o[%m0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}
