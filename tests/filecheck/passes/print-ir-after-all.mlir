// `tawac opt --print-ir-after-all` dumps the IR after every pass of the pipeline, then
// prints the final IR.
// RUN: tawac opt -p 'warp-specialize,plan{stages=2 mma-depth=1 persistent=false coarse-pipeline=false},pipeline' --print-ir-after-all %s | filecheck %s

// CHECK:      // -----// IR Dump After warp-specialize //----- //
// CHECK-NEXT: builtin.module {
// CHECK:        aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<64x64xbf16>, tensor<64x64xbf16>], 1>
// CHECK-NOT:    hopper.wgmma_wait
// CHECK:      // -----// IR Dump After pipeline //----- //
// CHECK-NEXT: builtin.module {
// CHECK:        aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<64x64xbf16>, tensor<64x64xbf16>], 1>
// CHECK:        hopper.wgmma_wait %{{.*}} pending 0
// CHECK:      builtin.module {
// CHECK:        aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<64x64xbf16>, tensor<64x64xbf16>], 1>
// CHECK-NOT:  IR Dump
tile.kernel @single(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
  %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = tile.dot %x, %y, %zero transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  tile.store %d, %c[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}
