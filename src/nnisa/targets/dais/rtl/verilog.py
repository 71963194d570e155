"""Verilog-2005 emission of a :class:`~.netlist.Netlist`: one module per program.

Layout of the file: a header comment with the program's statistics and the port table, the
top module (one line per op: a wire and the instance of its building block), the lookup-table
modules, then the small building-block library (``nnisa_shift_add``, ``nnisa_quant``,
``nnisa_mux``, ``nnisa_mul``, ``nnisa_bit1``, ``nnisa_bit2``).  Wires are plain unsigned
vectors; each block sign- or zero-extends its operands itself (parameters ``SA``/``SC``) and
computes modulo ``2^N``, so no Verilog signedness rule is involved outside the blocks.
"""

from __future__ import annotations

from .netlist import BLOCKS, Netlist, block_generics, stage_names

LIBRARY = r"""
// ---------------------------------------------------------------------------------------------
// nnisa building blocks.  Operands are extended by their signedness (SA, SC) and every result is
// computed modulo 2^N, N chosen by the emitter to hold the exact value (or 64 where the DAIS
// interpreter's int64 arithmetic wraps); outputs keep the low WY bits.
// ---------------------------------------------------------------------------------------------

// y = (a·2^SHA ± c·2^SHC) >>> RS  (SHA < 0: a is floor-shifted right first); opcodes 0, 1, 4
module nnisa_shift_add #(parameter WA = 1, SA = 0, WC = 1, SC = 0, N = 1, SHA = 0, SHC = 0, SUB = 0,
                         RS = 0, WY = 1) (input [WA-1:0] a, input [WC-1:0] c, output [WY-1:0] y);
  wire [WA:0] a1 = {SA ? a[WA-1] : 1'b0, a};
  wire [WC:0] c1 = {SC ? c[WC-1] : 1'b0, c};
  wire [N-1:0] ae;
  generate if (SHA < 0) begin : floor_a
    wire signed [WA:0] as = a1;
    wire [WA:0] ar = as >>> (-SHA);
    assign ae = {{N{ar[WA]}}, ar};
  end else begin : shl_a
    assign ae = {{N{a1[WA]}}, a1} << SHA;
  end endgenerate
  wire [N-1:0] ce = {{N{c1[WC]}}, c1} << SHC;
  wire [N-1:0] s = SUB ? ae - ce : ae + ce;
  wire signed [N-1:0] ss = s;
  wire [N-1:0] r = ss >>> RS;
  assign y = {{WY{r[N-1]}}, r};
endmodule

// y = wrap(σ·a >>> SH) (SH < 0: left shift; RELU: 0 for σ·a < 0); opcodes ±2, ±3, negation
module nnisa_quant #(parameter WA = 1, SA = 0, N = 1, NEG = 0, SH = 0, RELU = 0, WY = 1)
                    (input [WA-1:0] a, output [WY-1:0] y);
  localparam M = N > WY ? N : WY;
  wire [WA:0] a1 = {SA ? a[WA-1] : 1'b0, a};
  wire [N-1:0] an = {{N{a1[WA]}}, a1};
  wire [N-1:0] v = NEG ? -an : an;
  wire [M-1:0] vm = {{M{v[N-1]}}, v};
  wire [M-1:0] t;
  generate if (SH >= 0) begin : shr
    wire signed [M-1:0] vs = vm;
    assign t = vs >>> SH;
  end else begin : shl
    assign t = vm << (-SH);
  end endgenerate
  assign y = (RELU && v[N-1]) ? {WY{1'b0}} : t[WY-1:0];
endmodule

// y = sel ? wrap(a >>> SHA) : wrap(σ·c >>> SHC); opcodes ±6
module nnisa_mux #(parameter WA = 1, SA = 0, NA = 1, SHA = 0, WC = 1, SC = 0, NC = 1, SHC = 0, NEG = 0,
                   WY = 1) (input [WA-1:0] a, input [WC-1:0] c, input sel, output [WY-1:0] y);
  wire [WY-1:0] ya, yc;
  nnisa_quant #(.WA(WA), .SA(SA), .N(NA), .NEG(0), .SH(SHA), .RELU(0), .WY(WY)) qa (a, ya);
  nnisa_quant #(.WA(WC), .SA(SC), .N(NC), .NEG(NEG), .SH(SHC), .RELU(0), .WY(WY)) qc (c, yc);
  assign y = sel ? ya : yc;
endmodule

// y = a · c (mod 2^N); opcode 7
module nnisa_mul #(parameter WA = 1, SA = 0, WC = 1, SC = 0, N = 1, WY = 1)
                  (input [WA-1:0] a, input [WC-1:0] c, output [WY-1:0] y);
  wire signed [WA:0] as = {SA ? a[WA-1] : 1'b0, a};
  wire signed [WC:0] cs = {SC ? c[WC-1] : 1'b0, c};
  wire signed [N-1:0] p = as * cs;
  assign y = {{WY{p[N-1]}}, p};
endmodule

// unary bit operation on σ·a: OP 0 NOT, 1 ANY (≠ 0), 2 ALL (low MW bits set); opcodes ±9
module nnisa_bit1 #(parameter WA = 1, SA = 0, N = 1, NEG = 0, OP = 0, MW = 1, WY = 1)
                   (input [WA-1:0] a, output [WY-1:0] y);
  localparam M0 = N > WY ? N : WY;
  localparam M = M0 > MW ? M0 : MW;
  wire [WA:0] a1 = {SA ? a[WA-1] : 1'b0, a};
  wire [N-1:0] an = {{N{a1[WA]}}, a1};
  wire [N-1:0] v = NEG ? -an : an;
  wire [M-1:0] vm = {{M{v[N-1]}}, v};
  wire [M-1:0] nv = ~vm;
  generate if (OP == 0) begin : bnot
    assign y = nv[WY-1:0];
  end else if (OP == 1) begin : bany
    assign y = {{WY{1'b0}}, |v};
  end else begin : ball
    assign y = {{WY{1'b0}}, &vm[(MW > 0 ? MW : 1)-1:0]};
  end endgenerate
endmodule

// y = (σa·a << SHA) OP (σc·c << SHC), OP 0 AND, 1 OR, 2 XOR (mod 2^N); opcode 10
module nnisa_bit2 #(parameter WA = 1, SA = 0, WC = 1, SC = 0, N = 1, NEGA = 0, NEGC = 0, SHA = 0, SHC = 0,
                    OP = 0, WY = 1) (input [WA-1:0] a, input [WC-1:0] c, output [WY-1:0] y);
  wire [WA:0] a1 = {SA ? a[WA-1] : 1'b0, a};
  wire [WC:0] c1 = {SC ? c[WC-1] : 1'b0, c};
  wire [N-1:0] an = {{N{a1[WA]}}, a1};
  wire [N-1:0] cn = {{N{c1[WC]}}, c1};
  wire [N-1:0] ax = (NEGA ? -an : an) << SHA;
  wire [N-1:0] cx = (NEGC ? -cn : cn) << SHC;
  wire [N-1:0] r = OP == 0 ? (ax & cx) : (OP == 1 ? (ax | cx) : (ax ^ cx));
  assign y = {{WY{r[N-1]}}, r};
endmodule
"""


def lit(value: int, w: int) -> str:
    """A sized Verilog literal of ``value``'s ``w``-bit two's complement pattern."""
    return f"{w}'h{value & ((1 << w) - 1):x}"


def _b(x) -> int:
    return int(bool(x))


def header_lines(net: Netlist, stats: dict, name: str, comment: str) -> list[str]:
    """Header comment (shared with VHDL: ``comment`` is ``//`` or ``--``)."""
    c = comment
    out = [f"{c} {name}: generated by nnisa from a DAIS program (bit-exact with nnisa's interpreter)",
           f"{c} program: n_in={stats['n_in']} n_out={stats['n_out']} n_ops={stats['n_ops']} "
           f"adders={stats['n_adders']} adder_bits={stats['adder_bits']} tables={stats['n_tables']} "
           f"format={stats['format']}",
           f"{c} rtl: {stats['wire_bits']} wire bits, {stats['n_const']} constant wires, critical path "
           f"{stats['critical_delay']:g} adder delays"]
    if net.n_stages:
        out.append(f"{c} pipeline: {net.n_stages} stages, latency {net.latency_cycles} clock cycles "
                   f"(latency_cutoff={net.latency_cutoff:g} adder delays), {net.n_registers()} register bits")
    else:
        out.append(f"{c} combinational (no clock)")
    out.append(f"{c} inputs: inp_j = floor(x_j * 2^(inp_shift_j + f)) mod 2^width; outputs: y_j = out_j * 2^scale "
               "(signed ports are two's complement)")
    for p in net.inputs:
        out.append(f"{c}   {p.name}: {p.w} bits, f={p.f}")
    for p in net.outputs:
        src = "constant 0" if p.src < 0 else f"{'-' if p.neg or p.folded else ''}op {p.src}" + \
            (" (negation folded into the op: operands swapped)" if p.folded else "")
        out.append(f"{c}   {p.name}: {p.w} bits {'signed' if p.signed else 'unsigned'}, scale 2^{p.scale_exp}, {src}")
    return out


def emit_verilog(net: Netlist, stats: dict, name: str = "dais_top") -> str:
    """The Verilog source of ``net`` (top module ``name``)."""
    nodes = net.nodes
    names, regs, outs = stage_names(net)
    piped = net.n_stages > 0
    L = header_lines(net, stats, name, "//")
    L.append("`timescale 1ns/1ps")
    ports = (["input clk"] if piped else []) + [f"input [{p.w - 1}:0] {p.name}" for p in net.inputs] + \
        [f"output {'reg ' if piped else ''}[{p.w - 1}:0] {p.name}" for p in net.outputs]
    L.append(f"module {name} (")
    L.append(",\n".join("  " + s for s in ports))
    L.append(");")
    used_luts = set()
    for i, nd in enumerate(nodes):
        k, p, w = nd.kind, nd.p, nd.w
        ops = names[i]
        head = f"  wire [{w - 1}:0] v{i};"
        if k == "const":
            L.append(f"{head} assign v{i} = {lit(p['value'], w)};")
        elif k == "input":
            L.append(f"{head} assign v{i} = inp_{p['port']}[{p['off'] + w - 1}:{p['off']}];")
        elif k == "lut":
            used_luts.add(p["lut"])
            L.append(f"{head} {name}_lut{p['lut']} op{i} ({ops[0]}, v{i});")
        elif k in BLOCKS:
            if k == "shift_add" and len(nd.ins) == 1:
                refs = [ops[0], lit(p["const"], p["cw"])]
            elif k == "mux":
                refs = [ops[0], ops[1], _cond(p["cond"], nodes[nd.ins[2]], ops[2])]
            else:
                refs = ops[:len(nd.ins)]
            gen = ", ".join(map(str, block_generics(nodes, nd)))
            L.append(f"{head} {BLOCKS[k]} #({gen}) op{i} ({', '.join(refs)}, v{i});")
        else:  # pragma: no cover - build_netlist makes no other kind
            raise AssertionError(k)
    # outputs (negated ones through a negation block)
    drive = []
    for j, (o, src) in enumerate(zip(net.outputs, outs)):
        if o.src < 0:
            drive.append((o.name, "1'b0"))
        elif o.neg:
            s = nodes[o.src]
            L.append(f"  wire [{o.w - 1}:0] o{j}; nnisa_quant #({s.w}, {_b(s.signed)}, {max(o.w, s.w + 1)}, 1, 0, 0, "
                     f"{o.w}) neg{j} ({src}, o{j});")
            drive.append((o.name, f"o{j}"))
        else:
            drive.append((o.name, src))
    if piped:
        for r, _, w in regs:
            L.append(f"  reg [{w - 1}:0] {r};")
        L.append("  always @(posedge clk) begin")
        for r, src, _ in regs:
            L.append(f"    {r} <= {src};")
        for o, src in drive:
            L.append(f"    {o} <= {src};")
        L.append("  end")
    else:
        for o, src in drive:
            L.append(f"  assign {o} = {src};")
    L.append("endmodule")
    for t in sorted(used_luts):
        L.extend(_lut_module(f"{name}_lut{t}", net.luts[t]))
    L.append(LIBRARY)
    return "\n".join(L)


def _cond(cond: tuple, key, ref: str) -> str:
    kind, v = cond
    if kind == "const":
        return f"1'b{v}"
    if kind == "bit":
        return f"{ref}[{v}]"
    if key.signed:
        return f"($signed({ref}) >= $signed(65'sd{v}))"
    return f"({ref} >= 64'd{v})"


def _lut_module(name: str, lut: dict) -> list[str]:
    kw, w = lut["kw"], lut["w"]
    out = [f"// lookup table {lut['table']}: key = {lut['base']} + index",
           f"module {name} (input [{kw - 1}:0] a, output reg [{w - 1}:0] y);",
           "  always @(*) begin", "    case (a)"]
    klo = lut["klo"]
    out.extend(f"      {lit(klo + n, kw)}: y = {lit(v, w)};" for n, v in enumerate(lut["values"]))
    out += [f"      default: y = {w}'h0;", "    endcase", "  end", "endmodule"]
    return out
