// Simulation model of the Lattice ECP5 DP16KD block RAM, written for Tessera's tests: the
// subset that hdl/nve/local_buffer.py instantiates, checked at elaboration so that a use
// outside it stops the simulation instead of simulating something else.
//
// Supported: both ports 2048 x 9 (DATA_WIDTH_A = DATA_WIDTH_B = 9; the word address on
// AD13..AD3, AD2..AD0 unused), REGMODE "NOREG", WRITEMODE "NORMAL" (a write leaves the port's
// output unchanged), clocked on the rising edge of CLKA / CLKB with clock enable CEA / CEB and
// write enable WEA / WEB; OCE, chip selects (CSDECODE "0b000", CS tied low) and resets (tied
// low) not modelled. A read on one port of a word the other port writes in the same cycle
// returns the old word (the block leaves it undefined; the NVE's rules forbid it). Contents
// start at 0 (no INITVAL).
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

    initial begin
        if (DATA_WIDTH_A != 9 || DATA_WIDTH_B != 9 || REGMODE_A != "NOREG" ||
                REGMODE_B != "NOREG" || WRITEMODE_A != "NORMAL" || WRITEMODE_B != "NORMAL") begin
            $display("DP16KD model: unsupported configuration");
            $finish;
        end
    end

    reg [8:0] mem [0:2047];
    reg [8:0] doa = 9'd0, dob = 9'd0;
    integer i;
    initial for (i = 0; i < 2048; i = i + 1) mem[i] = 9'd0;

    wire [10:0] ada = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3};
    wire [10:0] adb = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3};
    wire [8:0] dia = {DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
    wire [8:0] dib = {DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
    // both ports' reads see the words as before the edge's writes
    wire [8:0] old_a = mem[ada], old_b = mem[adb];

    always @(posedge CLKA) if (CEA) begin
        if (WEA) mem[ada] <= dia;
        else doa <= old_a;
    end
    always @(posedge CLKB) if (CEB) begin
        if (WEB) mem[adb] <= dib;
        else dob <= old_b;
    end

    assign {DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = doa;
    assign {DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = dob;
    assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9} = 9'd0;
    assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9} = 9'd0;
endmodule
