// Simulation model of the Lattice ECP5 MULT18X18D DSP block, written for Tessera's tests:
// the subset that hdl/dsp.py instantiates, checked at elaboration so that a use outside it
// stops the simulation instead of simulating something else.
//
// Supported: 18x18 multiplication in MULT18X18D's parallel mode (SOURCEA = SOURCEB = 0,
// SOURCEB_MODE "B_SHIFT", MULT_BYPASS "DISABLED"), each operand signed when its SIGNEDA /
// SIGNEDB input is high; the input A and B registers, the pipeline register and the output
// register each either bypassed ("NONE") or clocked by CLK0 with clock enable CE0 and
// synchronous reset RST0 (RESETMODE "SYNC"). Registers start at 0 (as after GSR).
// Not modelled: the C input, the shift chains (SRIA/SRIB, SROA/SROB), the ROA/ROB/ROC outputs,
// SIGNEDP, CLK1-3 / CE1-3 / RST1-3 and asynchronous reset.
module MULT18X18D (
    input A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0,
    input B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0,
    input C17, C16, C15, C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0,
    input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB,
    input CLK0, CLK1, CLK2, CLK3, CE0, CE1, CE2, CE3, RST0, RST1, RST2, RST3,
    output P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0
);
    parameter REG_INPUTA_CLK = "NONE";
    parameter REG_INPUTA_CE = "CE0";
    parameter REG_INPUTA_RST = "RST0";
    parameter REG_INPUTB_CLK = "NONE";
    parameter REG_INPUTB_CE = "CE0";
    parameter REG_INPUTB_RST = "RST0";
    parameter REG_INPUTC_CLK = "NONE";
    parameter REG_INPUTC_CE = "CE0";
    parameter REG_INPUTC_RST = "RST0";
    parameter REG_PIPELINE_CLK = "NONE";
    parameter REG_PIPELINE_CE = "CE0";
    parameter REG_PIPELINE_RST = "RST0";
    parameter REG_OUTPUT_CLK = "NONE";
    parameter REG_OUTPUT_CE = "CE0";
    parameter REG_OUTPUT_RST = "RST0";
    parameter CLK0_DIV = "ENABLED";
    parameter CLK1_DIV = "ENABLED";
    parameter CLK2_DIV = "ENABLED";
    parameter CLK3_DIV = "ENABLED";
    parameter HIGHSPEED_CLK = "NONE";
    parameter GSR = "ENABLED";
    parameter CAS_MATCH_REG = "FALSE";
    parameter SOURCEB_MODE = "B_SHIFT";
    parameter MULT_BYPASS = "DISABLED";
    parameter RESETMODE = "SYNC";

    initial begin
        if (!((REG_INPUTA_CLK == "NONE" || REG_INPUTA_CLK == "CLK0")
              && (REG_INPUTB_CLK == "NONE" || REG_INPUTB_CLK == "CLK0")
              && (REG_PIPELINE_CLK == "NONE" || REG_PIPELINE_CLK == "CLK0")
              && (REG_OUTPUT_CLK == "NONE" || REG_OUTPUT_CLK == "CLK0")
              && REG_INPUTA_CE == "CE0" && REG_INPUTB_CE == "CE0"
              && REG_PIPELINE_CE == "CE0" && REG_OUTPUT_CE == "CE0"
              && REG_INPUTA_RST == "RST0" && REG_INPUTB_RST == "RST0"
              && REG_PIPELINE_RST == "RST0" && REG_OUTPUT_RST == "RST0"
              && REG_INPUTC_CLK == "NONE" && SOURCEB_MODE == "B_SHIFT"
              && MULT_BYPASS == "DISABLED" && RESETMODE == "SYNC"))
            $fatal(1, "MULT18X18D %m: parameters outside the simulation model's subset");
    end

    wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
    wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
    reg [17:0] a_q = 18'd0, b_q = 18'd0;
    reg [35:0] pipeline_q = 36'd0, output_q = 36'd0;

    wire [17:0] a_in = REG_INPUTA_CLK == "NONE" ? a : a_q;
    wire [17:0] b_in = REG_INPUTB_CLK == "NONE" ? b : b_q;
    // One more bit carries the sign mode: a signed operand is sign-extended, an unsigned one
    // zero-extended, and the 19x19 signed product is exact in 36 bits either way.
    wire signed [18:0] a_ext = {SIGNEDA & a_in[17], a_in};
    wire signed [18:0] b_ext = {SIGNEDB & b_in[17], b_in};
    wire signed [37:0] full = a_ext * b_ext;
    wire [35:0] product = full[35:0];
    wire [35:0] pipelined = REG_PIPELINE_CLK == "NONE" ? product : pipeline_q;
    wire [35:0] result = REG_OUTPUT_CLK == "NONE" ? pipelined : output_q;

    always @(posedge CLK0) begin
        if (SOURCEA !== 1'b0 || SOURCEB !== 1'b0)
            $fatal(1, "MULT18X18D %m: shift-chain operands (SOURCEA/SOURCEB) are not modelled");
        if (RST0) begin
            a_q <= 18'd0;
            b_q <= 18'd0;
            pipeline_q <= 36'd0;
            output_q <= 36'd0;
        end else if (CE0) begin
            a_q <= a;
            b_q <= b;
            pipeline_q <= product;
            output_q <= pipelined;
        end
    end

    assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = result;
endmodule
