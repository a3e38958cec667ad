// 4-tap transposed-form FIR filter, 8-bit samples, programmable 8-bit
// coefficients shifted in through the sample port while coef_load is high (so the multipliers are
// real multipliers that -dsp can map to SB_MAC16).  One sample per cycle,
// output latency 2 cycles.  Written for ensemble-tuner.
module fir (
    input  wire               clk,
    input  wire               rst,
    input  wire               coef_load,
    input  wire               in_valid,
    input  wire signed [7:0]  sample,
    output reg                out_valid,
    output reg  signed [11:0] result
);
    localparam TAPS = 4;
    reg signed [7:0]  coef [0:TAPS-1];
    reg signed [18:0] acc  [0:TAPS-1];
    reg signed [7:0]  x;
    reg               v;
    integer i;
    always @(posedge clk) begin
        if (coef_load) begin
            coef[0] <= sample;
            for (i = 1; i < TAPS; i = i + 1) coef[i] <= coef[i-1];
        end
        if (rst) begin
            v <= 1'b0;
            out_valid <= 1'b0;
            for (i = 0; i < TAPS; i = i + 1) acc[i] <= 19'sd0;
        end else begin
            x <= sample;
            v <= in_valid;
            if (v) begin
                acc[TAPS-1] <= x * coef[TAPS-1];
                for (i = 0; i < TAPS - 1; i = i + 1) acc[i] <= acc[i+1] + x * coef[i];
            end
            out_valid <= v;
            result <= acc[0][18:7];
        end
    end
endmodule
