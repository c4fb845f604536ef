// plan{consumer-warp-groups=W} on a kernel without MMAs: every 2-d tile of the consumer
// partition must have a register layout over W warp groups (tawac.analysis.tile_layouts).
// A 1-row tile has one (the blocked layout, warps side by side) over one warp group; over
// two, only where all eight warps fit side by side along it (`spanning`: 1 x 256 does,
// a run a lane), and plan refuses the others where the schedule is made, as `explain`
// does, not later in convert-to-ptx (1 x 128: 128 runs for 256 lanes).
// RUN: not tawac opt -p 'plan{consumer-warp-groups=2},cooperative-consumers' %s 2>&1 | filecheck %s --check-prefix=W2
// RUN: sed -e 's/1x128/1x256/g' %s > %t.mlir
// RUN: tawac opt -p 'plan{consumer-warp-groups=2},cooperative-consumers' %t.mlir | filecheck %s --check-prefix=SPAN
// SPAN: aref.partition consumer warp_groups 2 regs
// RUN: tawac opt -p 'plan{consumer-warp-groups=1},cooperative-consumers' %s | filecheck %s --check-prefix=W1
// RUN: tawac opt -p 'plan{consumer-warp-groups=0},cooperative-consumers' %s | filecheck %s --check-prefix=W1

// W1-LABEL: tile.kernel @one_row(
// W1:         aref.partition consumer warp_groups 1 regs
tile.kernel @one_row(%x: !tile.tensor<?x?xbf16>, %s: !tile.tensor<?xf32>) {
  %r = aref.create : !aref.aref<[tensor<1x128xbf16>], 1>
  aref.partition producer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<1x128xbf16>
    aref.put %r[%c0], %t : !aref.aref<[tensor<1x128xbf16>], 1>
  }
  aref.partition consumer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
    %t = aref.get %r[%c0] : !aref.aref<[tensor<1x128xbf16>], 1>
// W2: {{.*}}cooperative-consumers-blocked.mlir:[[# @LINE - 1]]:10: error: cooperative-consumers: a 1x128 tile cannot be split over 2 warp group(s) in the blocked layout: {{.*}}; use fewer
    %f = arith.extf %t : tensor<1x128xbf16> to tensor<1x128xf32>
    aref.consumed %r[%c0] : !aref.aref<[tensor<1x128xbf16>], 1>
    %v = tile.reduce sum %f, 1 : tensor<1x128xf32> -> tensor<1xf32>
    tile.store %v, %s[%c0] : tensor<1xf32> -> !tile.tensor<?xf32>
  }
  tile.return
}
