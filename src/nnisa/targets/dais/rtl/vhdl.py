"""VHDL-2008 emission of a :class:`~.netlist.Netlist` (the same blocks as the Verilog emitter).

One file: the ``nnisa_pkg`` package (``ext``: extend by sign or zeros / keep the low bits), the
building-block entities, the lookup-table entities and the top entity.  Every op is a signal
declaration plus one concurrent statement (VHDL separates the two).  Constants wider than 32
bits are bit-string literals, so no VHDL integer ever overflows.
"""

from __future__ import annotations

from .netlist import BLOCKS, Netlist, block_generics, stage_names
from .verilog import _b, header_lines

HEAD = "library ieee;\nuse ieee.std_logic_1164.all;\nuse ieee.numeric_std.all;\nuse work.nnisa_pkg.all;\n"

LIBRARY = r"""
-- ---------------------------------------------------------------------------------------------
-- nnisa building blocks (see the Verilog library: same parameters, same arithmetic modulo 2^N)
-- ---------------------------------------------------------------------------------------------
library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;
package nnisa_pkg is
  -- the low n bits of a, extended by its top bit (s /= 0) or by zeros
  function ext(a : std_logic_vector; s : integer; n : positive) return unsigned;
end package;
package body nnisa_pkg is
  function ext(a : std_logic_vector; s : integer; n : positive) return unsigned is
    constant av : std_logic_vector(a'length - 1 downto 0) := a;
    variable r : unsigned(n - 1 downto 0);
    variable fill : std_logic := '0';
  begin
    if s /= 0 then fill := av(av'high); end if;
    for i in 0 to n - 1 loop
      if i <= av'high then r(i) := av(i); else r(i) := fill; end if;
    end loop;
    return r;
  end function;
end package body;

library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;
use work.nnisa_pkg.all;
entity nnisa_shift_add is
  generic (WA, SA, WC, SC, N, SHA, SHC, SUB, RS, WY : integer);
  port (a : in std_logic_vector(WA - 1 downto 0); c : in std_logic_vector(WC - 1 downto 0);
        y : out std_logic_vector(WY - 1 downto 0));
end entity;
architecture rtl of nnisa_shift_add is
  signal a1 : unsigned(WA downto 0);
  signal ae, ce, s : unsigned(N - 1 downto 0);
begin
  a1 <= ext(a, SA, WA + 1);
  g_floor : if SHA < 0 generate
    ae <= ext(std_logic_vector(shift_right(signed(a1), -SHA)), 1, N);
  end generate;
  g_shl : if SHA >= 0 generate
    ae <= shift_left(ext(std_logic_vector(a1), 1, N), SHA);
  end generate;
  ce <= shift_left(ext(c, SC, N), SHC);
  s <= ae - ce when SUB /= 0 else ae + ce;
  y <= std_logic_vector(ext(std_logic_vector(shift_right(signed(s), RS)), 1, WY));
end architecture;

library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;
use work.nnisa_pkg.all;
entity nnisa_quant is
  generic (WA, SA, N, NEG, SH, RELU, WY : integer);
  port (a : in std_logic_vector(WA - 1 downto 0); y : out std_logic_vector(WY - 1 downto 0));
end entity;
architecture rtl of nnisa_quant is
  constant M : integer := maximum(N, WY);
  signal an, v : unsigned(N - 1 downto 0);
  signal vm, t : unsigned(M - 1 downto 0);
begin
  an <= ext(a, SA, N);
  v <= (0 - an) when NEG /= 0 else an;
  vm <= ext(std_logic_vector(v), 1, M);
  g_shr : if SH >= 0 generate
    t <= unsigned(shift_right(signed(vm), SH));
  end generate;
  g_shl : if SH < 0 generate
    t <= shift_left(vm, -SH);
  end generate;
  y <= (others => '0') when (RELU /= 0 and v(N - 1) = '1') else std_logic_vector(t(WY - 1 downto 0));
end architecture;

library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;
use work.nnisa_pkg.all;
entity nnisa_mux is
  generic (WA, SA, NA, SHA, WC, SC, NC, SHC, NEG, WY : integer);
  port (a : in std_logic_vector(WA - 1 downto 0); c : in std_logic_vector(WC - 1 downto 0);
        sel : in std_logic; y : out std_logic_vector(WY - 1 downto 0));
end entity;
architecture rtl of nnisa_mux is
  signal ya, yc : std_logic_vector(WY - 1 downto 0);
begin
  qa : entity work.nnisa_quant generic map (WA, SA, NA, 0, SHA, 0, WY) port map (a, ya);
  qc : entity work.nnisa_quant generic map (WC, SC, NC, NEG, SHC, 0, WY) port map (c, yc);
  y <= ya when sel = '1' else yc;
end architecture;

library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;
use work.nnisa_pkg.all;
entity nnisa_mul is
  generic (WA, SA, WC, SC, N, WY : integer);
  port (a : in std_logic_vector(WA - 1 downto 0); c : in std_logic_vector(WC - 1 downto 0);
        y : out std_logic_vector(WY - 1 downto 0));
end entity;
architecture rtl of nnisa_mul is
  signal p : signed(WA + WC + 1 downto 0);
begin
  p <= signed(ext(a, SA, WA + 1)) * signed(ext(c, SC, WC + 1));
  y <= std_logic_vector(ext(std_logic_vector(p), 1, WY));
end architecture;

library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;
use work.nnisa_pkg.all;
entity nnisa_bit1 is
  generic (WA, SA, N, NEG, OP, MW, WY : integer);
  port (a : in std_logic_vector(WA - 1 downto 0); y : out std_logic_vector(WY - 1 downto 0));
end entity;
architecture rtl of nnisa_bit1 is
  constant M : integer := maximum(maximum(N, WY), MW);
  signal an, v : unsigned(N - 1 downto 0);
  signal vm, nv : unsigned(M - 1 downto 0);
begin
  an <= ext(a, SA, N);
  v <= (0 - an) when NEG /= 0 else an;
  vm <= ext(std_logic_vector(v), 1, M);
  nv <= not vm;
  g_not : if OP = 0 generate
    y <= std_logic_vector(nv(WY - 1 downto 0));
  end generate;
  g_any : if OP = 1 generate
    y <= (0 => (or v), others => '0');
  end generate;
  g_all : if OP = 2 generate
    y <= (0 => (and vm(MW - 1 downto 0)), others => '0');
  end generate;
end architecture;

library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;
use work.nnisa_pkg.all;
entity nnisa_bit2 is
  generic (WA, SA, WC, SC, N, NEGA, NEGC, SHA, SHC, OP, WY : integer);
  port (a : in std_logic_vector(WA - 1 downto 0); c : in std_logic_vector(WC - 1 downto 0);
        y : out std_logic_vector(WY - 1 downto 0));
end entity;
architecture rtl of nnisa_bit2 is
  signal an, cn, an2, cn2, ax, cx, r : unsigned(N - 1 downto 0);
begin
  an <= ext(a, SA, N);
  cn <= ext(c, SC, N);
  an2 <= (0 - an) when NEGA /= 0 else an;
  cn2 <= (0 - cn) when NEGC /= 0 else cn;
  ax <= shift_left(an2, SHA);
  cx <= shift_left(cn2, SHC);
  r <= (ax and cx) when OP = 0 else (ax or cx) when OP = 1 else (ax xor cx);
  y <= std_logic_vector(ext(std_logic_vector(r), 1, WY));
end architecture;
"""


def bits(value: int, w: int) -> str:
    """``w``-bit two's complement pattern of ``value`` as a VHDL bit-string literal."""
    return '"' + format(value & ((1 << w) - 1), f"0{w}b") + '"'


def _slv(w: int) -> str:
    return f"std_logic_vector({w - 1} downto 0)"


def emit_vhdl(net: Netlist, stats: dict, name: str = "dais_top") -> str:
    """The VHDL source of ``net`` (top entity ``name``)."""
    nodes = net.nodes
    names, regs, outs = stage_names(net)
    piped = net.n_stages > 0
    decl: list[str] = []
    body: list[str] = []
    used_luts = set()
    for i, nd in enumerate(nodes):
        k, p, w = nd.kind, nd.p, nd.w
        ops = names[i]
        decl.append(f"  signal v{i} : {_slv(w)};")
        if k == "const":
            body.append(f"  v{i} <= {bits(p['value'], w)};")
        elif k == "input":
            body.append(f"  v{i} <= inp_{p['port']}({p['off'] + w - 1} downto {p['off']});")
        elif k == "lut":
            used_luts.add(p["lut"])
            body.append(f"  op{i} : entity work.{name}_lut{p['lut']} port map ({ops[0]}, v{i});")
        elif k in BLOCKS:
            if k == "shift_add" and len(nd.ins) == 1:
                refs = [ops[0], bits(p["const"], p["cw"])]
            elif k == "mux":
                refs = [ops[0], ops[1], _sel(p["cond"], nodes[nd.ins[2]], ops[2], i, decl, body)]
            else:
                refs = ops[:len(nd.ins)]
            gen = ", ".join(map(str, block_generics(nodes, nd)))
            body.append(f"  op{i} : entity work.{BLOCKS[k]} generic map ({gen}) port map ({', '.join(refs)}, v{i});")
        else:  # pragma: no cover
            raise AssertionError(k)
    drive = []
    for j, (o, src) in enumerate(zip(net.outputs, outs)):
        if o.src < 0:
            drive.append((o.name, "(others => '0')"))
        elif o.neg:
            s = nodes[o.src]
            decl.append(f"  signal o{j} : {_slv(o.w)};")
            body.append(f"  neg{j} : entity work.nnisa_quant generic map ({s.w}, {_b(s.signed)}, {max(o.w, s.w + 1)}, "
                        f"1, 0, 0, {o.w}) port map ({src}, o{j});")
            drive.append((o.name, f"o{j}"))
        else:
            drive.append((o.name, src))
    L = []
    for t in sorted(used_luts):
        L.extend(_lut_entity(f"{name}_lut{t}", net.luts[t]))
    L.append(HEAD + f"entity {name} is\n  port (")
    ports = (["clk : in std_logic"] if piped else []) + [f"{p.name} : in {_slv(p.w)}" for p in net.inputs] + \
        [f"{p.name} : out {_slv(p.w)}" for p in net.outputs]
    L.append(";\n".join("    " + s for s in ports))
    L.append("  );\nend entity;")
    L.append(f"architecture rtl of {name} is")
    L.extend(decl)
    L.extend(f"  signal {r} : {_slv(w)};" for r, _, w in regs)
    L.append("begin")
    L.extend(body)
    if piped:
        L.append("  process (clk) begin\n    if rising_edge(clk) then")
        L.extend(f"      {r} <= {src};" for r, src, _ in regs)
        L.extend(f"      {o} <= {src};" for o, src in drive)
        L.append("    end if;\n  end process;")
    else:
        L.extend(f"  {o} <= {src};" for o, src in drive)
    L.append("end architecture;")
    return "\n".join(header_lines(net, stats, name, "--")) + "\n" + LIBRARY + "\n" + "\n".join(L) + "\n"


def _sel(cond: tuple, key, ref: str, i: int, decl: list, body: list) -> str:
    kind, v = cond
    if kind == "const":
        return f"'{v}'"
    if kind == "bit":
        return f"{ref}({v})"
    decl.append(f"  signal sel{i} : std_logic;")
    if key.signed:
        body.append(f"  sel{i} <= '1' when signed({ref}) >= signed'({bits(v, 65)}) else '0';")
    else:
        body.append(f"  sel{i} <= '1' when unsigned({ref}) >= unsigned'({bits(v, 64)}) else '0';")
    return f"sel{i}"


def _lut_entity(name: str, lut: dict) -> list[str]:
    kw, w, klo = lut["kw"], lut["w"], lut["klo"]
    out = [f"-- lookup table {lut['table']}: key = {lut['base']} + index", HEAD.rstrip(),
           f"entity {name} is\n  port (a : in {_slv(kw)}; y : out {_slv(w)});\nend entity;",
           f"architecture rtl of {name} is\nbegin\n  process (a) begin\n    case a is"]
    out.extend(f"      when {bits(klo + n, kw)} => y <= {bits(v, w)};" for n, v in enumerate(lut["values"]))
    out.append("      when others => y <= (others => '0');\n    end case;\n  end process;\nend architecture;")
    return out
