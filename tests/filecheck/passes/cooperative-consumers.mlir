// plan{consumer-warp-groups=W},cooperative-consumers: the consumer partition gets W warp groups, each
// owning a row slice of every MMA tile (m64 blocks); 0 picks 2 for tiles with a multiple
// of 128 rows and 1 otherwise.  The producer is left alone.
// RUN: not tawac opt --split-input-file -p 'plan{consumer-warp-groups=2 persistent=false coarse-pipeline=false},cooperative-consumers' %s 2>&1 | filecheck %s --check-prefix=W2
// RUN: tawac opt --split-input-file -p 'plan{consumer-warp-groups=0 persistent=false coarse-pipeline=false},cooperative-consumers' %s | filecheck %s --check-prefix=AUTO
// RUN: not tawac opt -p 'plan{consumer-warp-groups=4 persistent=false coarse-pipeline=false},cooperative-consumers' %s 2>&1 | filecheck %s --check-prefix=RANGE

// RANGE: error: cooperative-consumers: consumer-warp-groups must be 0..3, got 4

// W2-LABEL: tile.kernel @rows128(
// W2:         aref.partition producer warp_groups 1 regs 24 {
// W2:         aref.partition consumer warp_groups 2 regs 240 {
// W2:           tile.dot {{.*}} -> tensor<128x256xf32>
// AUTO-LABEL: tile.kernel @rows128(
// AUTO:         aref.partition producer warp_groups 1 regs 24 {
// AUTO:         aref.partition consumer warp_groups 2 regs 240 {
tile.kernel @rows128(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 1>
  aref.partition producer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<256x64xbf16>
    aref.put %r[%c0], %x, %y : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 1>
  }
  aref.partition consumer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x, %y = aref.get %r[%c0] : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 1>
    %zero = arith.constant dense<0.0> : tensor<128x256xf32>
    %d = tile.dot %x, %y, %zero transpose_rhs : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    aref.consumed %r[%c0] : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 1>
    tile.store %d, %c[%c0, %c0] : tensor<128x256xf32> -> !tile.tensor<?x?xf32>
  }
  tile.return
}

// -----

// A 64-row tile cannot be split over two warp groups; the automatic choice is 1.
// AUTO-LABEL: tile.kernel @rows64(
// AUTO:         aref.partition producer warp_groups 1 regs 24 {
// AUTO:         aref.partition consumer warp_groups 1 regs 256 {
// W2-NOT: rows64
tile.kernel @rows64(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %r = aref.create : !aref.aref<[tensor<64x64xbf16>, tensor<256x64xbf16>], 1>
  aref.partition producer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<256x64xbf16>
    aref.put %r[%c0], %x, %y : !aref.aref<[tensor<64x64xbf16>, tensor<256x64xbf16>], 1>
  }
  aref.partition consumer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %x, %y = aref.get %r[%c0] : !aref.aref<[tensor<64x64xbf16>, tensor<256x64xbf16>], 1>
    %zero = arith.constant dense<0.0> : tensor<64x256xf32>
    %d = tile.dot %x, %y, %zero transpose_rhs : tensor<64x64xbf16>, tensor<256x64xbf16> -> tensor<64x256xf32>
// W2: {{.*}}cooperative-consumers.mlir:[[# @LINE - 1]]:10: error: cooperative-consumers: a 64-row MMA tile cannot be split over 2 consumer warp groups (each needs a multiple of 64 rows)
    aref.consumed %r[%c0] : !aref.aref<[tensor<64x64xbf16>, tensor<256x64xbf16>], 1>
    tile.store %d, %c[%c0, %c0] : tensor<64x256xf32> -> !tile.tensor<?x?xf32>
  }
  tile.return
}
