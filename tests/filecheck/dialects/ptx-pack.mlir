// 16-bit halves: pack two into a .b32 register and split one again (PTX ISA 9.7.9.1 mov
// with a vector operand).  convert-to-ptx carries 16-bit tiles through loops packed.
// RUN: tawac opt %s | tawac opt - | filecheck %s
// RUN: tawac opt %s --emit ptx | filecheck %s --check-prefix=PTX

// CHECK:      %1, %2 = "ptx.unpack_b16"(%0) : (!ptx.reg<b32>) -> (!ptx.reg<b16>, !ptx.reg<b16>)
// CHECK-NEXT: %3 = "ptx.pack_b16"(%2, %1) : (!ptx.reg<b16>, !ptx.reg<b16>) -> !ptx.reg<b32>

// PTX:      .reg .b16 %h<2>;
// PTX:      mov.b32 {%h0, %h1}, %r0;
// PTX-NEXT: mov.b32 %r1, {%h1, %h0};
"ptx.module"() <{version = "8.0", target = "sm_90a", smem_symbol = "tawac_smem"}> ({
  "ptx.entry"() <{sym_name = "k", params = [], maxntid = 128 : i64, minnctapersm = 1 : i64, launch = {}}> ({
    %0 = "ptx.sreg"() <{sreg = "tid.x"}> : () -> !ptx.reg<b32>
    %1, %2 = "ptx.unpack_b16"(%0) : (!ptx.reg<b32>) -> (!ptx.reg<b16>, !ptx.reg<b16>)
    %3 = "ptx.pack_b16"(%2, %1) : (!ptx.reg<b16>, !ptx.reg<b16>) -> !ptx.reg<b32>
    "ptx.exit"() : () -> ()
  }) : () -> ()
}) : () -> ()
