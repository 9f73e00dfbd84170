// Simulation model of the Lattice ECP5 DP16KD block RAM, written for Tessera's tests: the
// subset that hdl/dp16kd.py instantiates (the NVE's local buffer, the PLMs' block RAMs with an
// output register), checked at elaboration so that a use outside it stops the simulation
// instead of simulating something else.
//
// Supported: both ports in the same mode, 1024 x 18, 2048 x 9, 4096 x 4, 8192 x 2 or
// 16384 x 1 (DATA_WIDTH_A = DATA_WIDTH_B); the word address on the top address pins (AD13..AD4
// in the 18-bit mode, whose AD1 / AD0 enable the write of bits 17..9 / 8..0; AD13..AD3 in the
// 9-bit mode, ...; the other pins unused); REGMODE "NOREG" or "OUTREG" per port (the output
// register loads the read word at every rising edge with OCE high, a cycle of latency);
// WRITEMODE "NORMAL" (a write leaves the port's read word unchanged); clocked on the rising
// edge of CLKA / CLKB with clock enable CEA / CEB and write enable WEA / WEB; chip selects
// (CSDECODE "0b000", CS tied low) and resets (tied low) not modelled. A read on one port of a
// word the other port writes in the same cycle returns the old word (the block leaves it
// undefined; the designs never use such a read). Contents start at 0 (no INITVAL).
module DP16KD (
    input DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5,
    input DIA4, DIA3, DIA2, DIA1, DIA0,
    input ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
    input CEA, OCEA, CLKA, WEA, CSA2, CSA1, CSA0, RSTA,
    input DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5,
    input DIB4, DIB3, DIB2, DIB1, DIB0,
    input ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
    input CEB, OCEB, CLKB, WEB, CSB2, CSB1, CSB0, RSTB,
    output DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5,
    output DOA4, DOA3, DOA2, DOA1, DOA0,
    output DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5,
    output DOB4, DOB3, DOB2, DOB1, DOB0
);
    parameter DATA_WIDTH_A = 18;
    parameter DATA_WIDTH_B = 18;
    parameter REGMODE_A = "NOREG";
    parameter REGMODE_B = "NOREG";
    parameter RESETMODE = "SYNC";
    parameter ASYNC_RESET_RELEASE = "SYNC";
    parameter CSDECODE_A = "0b000";
    parameter CSDECODE_B = "0b000";
    parameter WRITEMODE_A = "NORMAL";
    parameter WRITEMODE_B = "NORMAL";
    parameter GSR = "ENABLED";

    localparam W = DATA_WIDTH_A;
    localparam ABITS = W == 18 ? 10 : W == 9 ? 11 : W == 4 ? 12 : W == 2 ? 13 : 14;

    initial begin
        if (DATA_WIDTH_A != DATA_WIDTH_B || !(W == 18 || W == 9 || W == 4 || W == 2 || W == 1)
                || !(REGMODE_A == "NOREG" || REGMODE_A == "OUTREG")
                || !(REGMODE_B == "NOREG" || REGMODE_B == "OUTREG")
                || WRITEMODE_A != "NORMAL" || WRITEMODE_B != "NORMAL") begin
            $display("DP16KD model: unsupported configuration");
            $finish;
        end
    end

    reg [W-1:0] mem [0:(1 << ABITS) - 1];
    reg [W-1:0] doa = 0, dob = 0, doa_reg = 0, dob_reg = 0;
    integer i;
    initial for (i = 0; i < (1 << ABITS); i = i + 1) mem[i] = 0;

    wire [13:0] ada_pins = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3,
                            ADA2, ADA1, ADA0};
    wire [13:0] adb_pins = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3,
                            ADB2, ADB1, ADB0};
    wire [ABITS-1:0] ada = ada_pins[13 -: ABITS], adb = adb_pins[13 -: ABITS];
    wire [17:0] dia = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7,
                       DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
    wire [17:0] dib = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7,
                       DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
    // bits a write changes: in the 18-bit mode AD1 / AD0 enable the upper / lower nine
    wire [17:0] mask_a = W == 18 ? {{9{ADA1}}, {9{ADA0}}} : {18{1'b1}};
    wire [17:0] mask_b = W == 18 ? {{9{ADB1}}, {9{ADB0}}} : {18{1'b1}};
    // both ports' reads see the words as before the edge's writes
    wire [W-1:0] old_a = mem[ada], old_b = mem[adb];

    always @(posedge CLKA) if (CEA) begin
        if (WEA) mem[ada] <= (old_a & ~mask_a[W-1:0]) | (dia[W-1:0] & mask_a[W-1:0]);
        else doa <= old_a;
    end
    always @(posedge CLKB) if (CEB) begin
        if (WEB) mem[adb] <= (old_b & ~mask_b[W-1:0]) | (dib[W-1:0] & mask_b[W-1:0]);
        else dob <= old_b;
    end
    always @(posedge CLKA) if (OCEA) doa_reg <= doa;
    always @(posedge CLKB) if (OCEB) dob_reg <= dob;

    // the port's word, zero-extended to the 18 pins
    wire [17:0] out_a = REGMODE_A == "OUTREG" ? doa_reg : doa;
    wire [17:0] out_b = REGMODE_B == "OUTREG" ? dob_reg : dob;
    assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5,
            DOA4, DOA3, DOA2, DOA1, DOA0} = out_a;
    assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5,
            DOB4, DOB3, DOB2, DOB1, DOB0} = out_b;
endmodule
