// Simulation models of the Lattice ECP5 flip-flop primitives that hdl/replica.py instantiates,
// written for Tessera's tests.
//
// FD1P3IX: D flip-flop with clock enable SP and a synchronous clear CD that takes priority
// over SP. FD1P3AX: the same without the clear. Both start at 0, as after configuration.
// Only GSR "DISABLED" is modelled (the global set/reset is not part of the simulated design);
// another value stops the simulation.
module FD1P3IX (input D, SP, CK, CD, output reg Q);
    parameter GSR = "ENABLED";
    initial begin
        Q = 1'b0;
        if (GSR != "DISABLED")
            $fatal(1, "FD1P3IX %m: only GSR \"DISABLED\" is modelled");
    end
    always @(posedge CK)
        if (CD)
            Q <= 1'b0;
        else if (SP)
            Q <= D;
endmodule

module FD1P3AX (input D, SP, CK, output Q);
    parameter GSR = "ENABLED";
    FD1P3IX #(.GSR(GSR)) ff (.D(D), .SP(SP), .CK(CK), .CD(1'b0), .Q(Q));
endmodule
