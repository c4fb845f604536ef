// fuse-loops: two adjacent key loops streaming the same tiles (causal attention's
// off-diagonal and diagonal blocks, as Triton's tutorial writes them) become one loop;
// the bodies' common head and tail stay outside an scf.if on the iteration.
// RUN: tawac opt --split-input-file -p fuse-loops %s | filecheck %s

// CHECK-LABEL: tile.kernel @two_stages(
// CHECK:         %[[END1:.*]] = arith.muli %[[PID:.*]], %{{.*}} : index
// CHECK:         %[[HI:.*]] = arith.addi
// CHECK-NEXT:    %[[R:.*]] = scf.for %[[N:.*]] = %{{.*}} to %[[HI]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<64x64xf32>) {
// CHECK-NEXT:      %[[K:.*]] = tile.load %k[%[[N]], %{{.*}}]
// CHECK-NEXT:      %[[S:.*]] = tile.dot %{{.*}}, %[[K]], %{{.*}} transpose_rhs
// CHECK-NEXT:      %[[C:.*]] = arith.cmpi ult, %[[N]], %[[END1]] : index
// CHECK-NEXT:      %[[X:.*]] = scf.if %[[C]] -> (tensor<64x64xf32>) {
// CHECK-NEXT:        scf.yield %[[S]]
// CHECK-NEXT:      } else {
// CHECK:             %[[SM:.*]] = tile.select
// CHECK-NEXT:        scf.yield %[[SM]]
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[E:.*]] = math.exp2 %[[X]]
// CHECK-NEXT:      %[[P:.*]] = arith.truncf %[[E]]
// CHECK-NEXT:      %[[V:.*]] = tile.load %v[%[[N]], %{{.*}}]
// CHECK-NEXT:      %[[O:.*]] = tile.dot %[[P]], %[[V]], %[[ACC]]
// CHECK-NEXT:      scf.yield %[[O]]
// CHECK-NEXT:    }
// CHECK-NOT:     scf.for
// CHECK:         tile.store %[[R]]
tile.kernel @two_stages(%q: !tile.tensor<?x?xbf16>, %k: !tile.tensor<?x?xbf16>, %v: !tile.tensor<?x?xbf16>, %o: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %c64 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %neg = arith.constant dense<-1.0e+06> : tensor<64x64xf32>
  %qt = tile.load %q[%m0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
  %a = scf.for %n = %c0 to %m0 step %c64 iter_args(%acc = %zero) -> (tensor<64x64xf32>) {
    %kt = tile.load %k[%n, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qt, %kt, %zero transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %e = math.exp2 %s : tensor<64x64xf32>
    %p = arith.truncf %e : tensor<64x64xf32> to tensor<64x64xbf16>
    %vt = tile.load %v[%n, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %r = tile.dot %p, %vt, %acc : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %r : tensor<64x64xf32>
  }
  %c64b = arith.constant 64 : index
  %lo = arith.muli %pid, %c64b : index
  %hi = arith.addi %lo, %c64b : index
  %b = scf.for %n = %lo to %hi step %c64 iter_args(%acc = %a) -> (tensor<64x64xf32>) {
    %kt = tile.load %k[%n, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qt, %kt, %zero transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %rows = tile.iota 0, %m0 : tensor<64x64xi32>
    %cols = tile.iota 1, %n : tensor<64x64xi32>
    %keep = tile.cmpi sge, %rows, %cols : tensor<64x64xi32>
    %sm = tile.select %keep, %s, %neg : tensor<64x64xi1>, tensor<64x64xf32>
    %e = math.exp2 %sm : tensor<64x64xf32>
    %p = arith.truncf %e : tensor<64x64xf32> to tensor<64x64xbf16>
    %vt = tile.load %v[%n, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %r = tile.dot %p, %vt, %acc : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %r : tensor<64x64xf32>
  }
  tile.store %b, %o[%m0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

// Loops that load different tiles (two GEMMs in sequence): their middles would hold
// loads and MMAs, which stay where the producer and the pipeline see them: not fused.
// CHECK-LABEL: tile.kernel @two_gemms(
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK-NOT:     scf.if
tile.kernel @two_gemms(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %x = scf.for %i = %c0 to %K step %c64 iter_args(%acc = %zero) -> (tensor<64x64xf32>) {
    %t = tile.load %a[%c0, %i] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %d = tile.dot %t, %t, %acc transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  %K2 = arith.addi %K, %K : index
  %y = scf.for %i = %K to %K2 step %c64 iter_args(%acc = %x) -> (tensor<64x64xf32>) {
    %t = tile.load %b[%c0, %i] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %d = tile.dot %t, %t, %acc transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  tile.store %y, %c[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

// Steps that differ: not one loop.
// CHECK-LABEL: tile.kernel @steps(
// CHECK:         scf.for
// CHECK:         scf.for
tile.kernel @steps(%q: !tile.tensor<?x?xbf16>, %k: !tile.tensor<?x?xbf16>, %o: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %qt = tile.load %q[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
  %a = scf.for %n = %c0 to %c128 step %c64 iter_args(%acc = %zero) -> (tensor<64x64xf32>) {
    %kt = tile.load %k[%n, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qt, %kt, %acc transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %s : tensor<64x64xf32>
  }
  %c256 = arith.constant 256 : index
  %b = scf.for %n = %c128 to %c256 step %c128 iter_args(%acc = %a) -> (tensor<64x64xf32>) {
    %kt = tile.load %k[%n, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %qt, %kt, %acc transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %s : tensor<64x64xf32>
  }
  tile.store %b, %o[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}
