// 3x3 box-blur stencil datapath over a streamed 64-pixel-wide 8-bit image:
// two line buffers (block RAM candidates, -nobram turns them into logic),
// a 3x3 window of registers and an adder tree; one pixel per cycle after
// a fill latency of two lines plus the pipeline.  Written for ensemble-tuner.
module stencil (
    input  wire       clk,
    input  wire       rst,
    input  wire       in_valid,
    input  wire [7:0] pixel,
    output reg        out_valid,
    output reg  [7:0] blurred
);
    localparam W = 64;
    reg [7:0] line0 [0:W-1];
    reg [7:0] line1 [0:W-1];
    reg [5:0] col;
    reg [7:0] w00, w01, w02, w10, w11, w12, w20, w21, w22;
    reg [7:0] l0, l1;
    reg [11:0] s0, s1, s2;
    reg [11:0] sum;
    reg [2:0] vpipe;
    always @(posedge clk) begin
        if (rst) begin
            col <= 6'd0;
            vpipe <= 3'd0;
            out_valid <= 1'b0;
        end else begin
            vpipe <= {vpipe[1:0], in_valid};
            if (in_valid) begin
                l0 <= line0[col];
                l1 <= line1[col];
                line0[col] <= pixel;
                line1[col] <= line0[col];
                col <= col + 6'd1;
                {w00, w01, w02} <= {w01, w02, pixel};
                {w10, w11, w12} <= {w11, w12, l0};
                {w20, w21, w22} <= {w21, w22, l1};
            end
            s0 <= w00 + w01 + w02;
            s1 <= w10 + w11 + w12;
            s2 <= w20 + w21 + w22;
            sum <= s0 + s1 + s2;
            // divide by 9 approximated as (sum * 57) >> 9
            blurred <= (sum * 12'd57) >> 9;
            out_valid <= vpipe[2];
        end
    end
endmodule
