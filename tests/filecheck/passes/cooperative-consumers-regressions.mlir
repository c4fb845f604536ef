// Regressions (issue 7) of cooperative-consumers' automatic choice of consumer warp groups.
// RUN: not tawac opt --split-input-file -p 'plan{consumer-warp-groups=0 persistent=false coarse-pipeline=false},cooperative-consumers' %s 2>&1 | filecheck %s --check-prefix=AUTO
// RUN: not tawac opt --split-input-file -p 'plan{consumer-warp-groups=3 persistent=false coarse-pipeline=false},cooperative-consumers' %s 2>&1 | filecheck %s --check-prefix=W3

// A 96-row MMA tile crashed the automatic choice (StopIteration): no count of warp groups
// gives whole m64 blocks, and one wgmma covers 64 rows.
// AUTO: {{.*}}cooperative-consumers-regressions.mlir:[[# @LINE + 14]]:10: error: cooperative-consumers: a 96-row MMA tile is not a multiple of 64 rows (one wgmma instruction covers 64)
// W3: {{.*}}cooperative-consumers-regressions.mlir:[[# @LINE + 13]]:10: error: cooperative-consumers: a 96-row MMA tile cannot be split over 3 consumer warp groups
tile.kernel @rows96(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %r = aref.create : !aref.aref<[tensor<96x64xbf16>, tensor<128x64xbf16>], 1>
  aref.partition producer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<96x64xbf16>
    %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    aref.put %r[%c0], %x, %y : !aref.aref<[tensor<96x64xbf16>, tensor<128x64xbf16>], 1>
  }
  aref.partition consumer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x, %y = aref.get %r[%c0] : !aref.aref<[tensor<96x64xbf16>, tensor<128x64xbf16>], 1>
    %zero = arith.constant dense<0.0> : tensor<96x128xf32>
    %d = tile.dot %x, %y, %zero transpose_rhs : tensor<96x64xbf16>, tensor<128x64xbf16> -> tensor<96x128xf32>
    aref.consumed %r[%c0] : !aref.aref<[tensor<96x64xbf16>, tensor<128x64xbf16>], 1>
    tile.store %d, %c[%c0, %c0] : tensor<96x128xf32> -> !tile.tensor<?x?xf32>
  }
  tile.return
}

// -----

// 192x256: three warp groups get 160 registers a thread, too few for an m64n256 f32
// accumulator (128 registers) and the rest: ptxas failed with C7602 "Insufficient
// registers". The automatic choice falls back to one warp group; asking for three is an
// error that says why.
// AUTO-LABEL: tile.kernel @rows192_n256(
// AUTO:         aref.partition consumer warp_groups 1 regs 256 {
// W3: {{.*}}cooperative-consumers-regressions.mlir:[[# @LINE + 9]]:3: error: cooperative-consumers: an MMA with 256 columns keeps 128 accumulator registers per thread in flight; 3 consumer warp groups get 160 registers each, room for at most 96; use fewer
tile.kernel @rows192_n256(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %r = aref.create : !aref.aref<[tensor<192x64xbf16>, tensor<256x64xbf16>], 1>
  aref.partition producer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<192x64xbf16>
    %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<256x64xbf16>
    aref.put %r[%c0], %x, %y : !aref.aref<[tensor<192x64xbf16>, tensor<256x64xbf16>], 1>
  }
  aref.partition consumer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x, %y = aref.get %r[%c0] : !aref.aref<[tensor<192x64xbf16>, tensor<256x64xbf16>], 1>
    %zero = arith.constant dense<0.0> : tensor<192x256xf32>
    %d = tile.dot %x, %y, %zero transpose_rhs : tensor<192x64xbf16>, tensor<256x64xbf16> -> tensor<192x256xf32>
    aref.consumed %r[%c0] : !aref.aref<[tensor<192x64xbf16>, tensor<256x64xbf16>], 1>
    tile.store %d, %c[%c0, %c0] : tensor<192x256xf32> -> !tile.tensor<?x?xf32>
  }
  tile.return
}

// -----

// 192x192 (96 accumulator registers) still gets three warp groups.
// AUTO-LABEL: tile.kernel @rows192_n192(
// AUTO:         aref.partition consumer warp_groups 3 regs 160 {
// W3-LABEL: tile.kernel @rows192_n192(
// W3:         aref.partition consumer warp_groups 3 regs 160 {
tile.kernel @rows192_n192(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %r = aref.create : !aref.aref<[tensor<192x64xbf16>, tensor<192x64xbf16>], 1>
  aref.partition producer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<192x64xbf16>
    %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<192x64xbf16>
    aref.put %r[%c0], %x, %y : !aref.aref<[tensor<192x64xbf16>, tensor<192x64xbf16>], 1>
  }
  aref.partition consumer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x, %y = aref.get %r[%c0] : !aref.aref<[tensor<192x64xbf16>, tensor<192x64xbf16>], 1>
    %zero = arith.constant dense<0.0> : tensor<192x192xf32>
    %d = tile.dot %x, %y, %zero transpose_rhs : tensor<192x64xbf16>, tensor<192x64xbf16> -> tensor<192x192xf32>
    aref.consumed %r[%c0] : !aref.aref<[tensor<192x64xbf16>, tensor<192x64xbf16>], 1>
    tile.store %d, %c[%c0, %c0] : tensor<192x192xf32> -> !tile.tensor<?x?xf32>
  }
  tile.return
}
