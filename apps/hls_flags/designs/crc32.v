// Byte-wide CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) core: one
// input byte per cycle, the 32-bit state read out a byte at a time through
// sel (keeps the pin count within small packages).  Written for ensemble-tuner.
module crc32 (
    input  wire       clk,
    input  wire       rst,
    input  wire       in_valid,
    input  wire [7:0] data,
    input  wire [1:0] sel,
    output reg  [7:0] crc_byte
);
    reg [31:0] crc;
    function [31:0] step8(input [31:0] c, input [7:0] d);
        integer k;
        reg [31:0] r;
        begin
            r = c ^ {24'd0, d};
            for (k = 0; k < 8; k = k + 1) r = r[0] ? (r >> 1) ^ 32'hEDB88320 : (r >> 1);
            step8 = r;
        end
    endfunction
    always @(posedge clk) begin
        if (rst) crc <= 32'hFFFFFFFF;
        else if (in_valid) crc <= step8(crc, data);
        case (sel)
            2'd0: crc_byte <= ~crc[7:0];
            2'd1: crc_byte <= ~crc[15:8];
            2'd2: crc_byte <= ~crc[23:16];
            default: crc_byte <= ~crc[31:24];
        endcase
    end
endmodule
