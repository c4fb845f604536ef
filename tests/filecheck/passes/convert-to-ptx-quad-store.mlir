// convert-to-ptx: a 16-bit tile stored from registers under bounds (an expert's last
// block of rows) leaves as 16-byte vectors after a transpose within each quad (two
// butterfly shuffles, lane masks 2 and 1), one predicated st.global.v4.b32 per four
// 8-column blocks and row; the destination's pointer asks the launcher for 16-byte
// aligned rows ("align": 16, docs/abi.md). An f32 tile leaves as 8-byte pairs.
// RUN: tawac compile %S/../../../examples/gemm_grouped_offsets.mlir -o %t.ptx && filecheck %s < %t.ptx
// RUN: tawac compile %s -o %t2.ptx && filecheck %s --check-prefix=PLAIN < %t2.ptx
// RUN: python3 -c "import json, sys; print(*[json.dumps(p) for p in json.load(open(sys.argv[1]))['params'] if p['kind'] == 'pointer'], sep='\n')" %t2.json | filecheck %s --check-prefix=ABI
// RUN: tawac compile %S/../../data/variants/swapped_axes_f32_out.mlir -o %t3.ptx && filecheck %s --check-prefix=F32 < %t3.ptx

// CHECK:     cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
// CHECK:     shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2, 0x1f, 0xffffffff;
// CHECK:     shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2, 0x1f, 0xffffffff;
// CHECK:     shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1, 0x1f, 0xffffffff;
// CHECK:     shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1, 0x1f, 0xffffffff;
// CHECK:     @{{%p[0-9]+}} st.global.v4.b32 [{{%rd[0-9]+}}], {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}};
// CHECK-NOT: st.global.b16

// A destination without a TMA store: the same vectors, its pointer marked aligned.
// PLAIN:     shfl.sync.bfly.b32
// PLAIN:     @{{%p[0-9]+}} st.global.v4.b32
// PLAIN-NOT: st.global.b16
// ABI:       {"kind": "pointer", "arg": "c", "align": 16}
// F32:       @{{%p[0-9]+}} st.global.v2.f32 [{{%rd[0-9]+}}], {{{%f[0-9]+}}, {{%f[0-9]+}}};
// F32-NOT:   st.global.f32
tile.kernel @bounded_only(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>, %end: index) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 64 : index
  %bm = arith.constant 128 : index
  %bn = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %N = tile.dim %c[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] bounds [%end, %N] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
