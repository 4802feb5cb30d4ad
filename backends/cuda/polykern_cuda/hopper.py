"""Hopper's matrix path in CUDA C (docs/language.md "Hopper: warpgroup MMA, tensor copies, transaction
barriers"; the rules and the exact meaning are ``polykern.ir.hopper``), for ``cuda -arch=sm_90a``.

- Barrier sets are ``__shared__ unsigned long long[n]``; their operations are the ``mbarrier`` PTX
  instructions on the shared address (``mbarrier.init`` then ``fence.mbarrier_init``; ``arrive``,
  ``arrive.expect_tx``; a wait spins on ``mbarrier.try_wait.parity``).
- A tensor map is a hidden ``const __grid_constant__`` kernel parameter of 128 bytes (CUtensorMap,
  64-byte aligned), after the user's parameters in declaration order; the runtime encodes it at launch
  with ``cuTensorMapEncodeTiled`` from the Buffer and the shape (runtime/tensor_maps.py). A tensor copy
  is ``cp.async.bulk.tensor.2d`` completing on the barrier (coordinates innermost first: column, row).
- A warpgroup accumulator is ``float acc[n/2]`` in each thread, in wgmma's register layout: thread t of
  the warpgroup (warp w = t/32, lane l) holds, for each 8-column chunk j, rows 16w + l/4 and +8 at
  columns 8j + 2(l%4) + {0, 1} as elements 4j .. 4j+3. ``wgmma`` is ``wgmma.mma_async`` m64n{n}k16 with
  both operands in shared memory by descriptor (128-byte swizzle, K-major rows of 128 bytes, 8-row
  atoms 1024 bytes apart), preceded by ``wgmma.fence``.
- A named barrier is ``bar.sync id, count`` (``pk.named_barrier``) or ``bar.arrive id, count``
  (``pk.named_arrive``): PTX's barriers 1..15, which order the arrivers' memory accesses before the
  waiters' (``__syncthreads`` is barrier 0).
- ``pk.warpgroups(n)`` gives the kernel ``__launch_bounds__(128 n, 1)`` (``setmaxnreg`` needs that cap).
- A swizzled ``pk.shared_dynamic`` array starts at the dynamic shared memory's first 1024-byte boundary;
  the runtime adds 1024 bytes to the launch's dynamic shared memory for it.
"""
from __future__ import annotations

import re

from polykern.ir import hopper as H
from polykern.ir import nodes as N

#: CUDA C of the helpers every Hopper kernel uses (one copy per translation unit).
HELPERS = {
    "pk_tmap": ("""// a CUtensorMap, encoded by the runtime at launch (cuTensorMapEncodeTiled)
struct __align__(64) pk_tmap {{ unsigned long long v[16]; }};""", ()),
    "pk_smem": ("""{fn} unsigned pk_smem(const void* p) {{
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (unsigned)a;
}}""", ()),
    "pk_mbar_wait": ("""{fn} void pk_mbar_wait(unsigned bar, unsigned parity) {{
    unsigned ok;
    do {{
        asm volatile("{{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\nselp.u32 %0, 1, 0, p;\\n}}\\n"
                     : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    }} while (!ok);
}}""", ()),
    "pk_wg_desc": ("""// a wgmma shared-memory matrix descriptor: 128-byte swizzle, 8-row atoms 1024 bytes apart
{fn} unsigned long long pk_wg_desc(unsigned addr) {{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}}""", ()),
    "pk_wg_desc_mn": ("""// the descriptor of an MN-major operand (pk.wgmma_kn's B): 128-byte swizzle, 8 K-rows 1024 bytes apart,
// panels of 64 N-columns panel_bytes apart
{fn} unsigned long long pk_wg_desc_mn(unsigned addr, unsigned panel_bytes) {{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)((panel_bytes >> 4) & 0x3FFFu) << 16)
        | (64ull << 32) | (1ull << 62);
}}""", ()),
    "pk_pack_f16": ("""// two floats rounded to f16 (nearest even), lo in the low half: a register of wgmma's A operand
{fn} unsigned pk_pack_f16(float lo, float hi) {{
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}}""", ()),
    "pk_pack_bf16": ("""// two floats rounded to bf16 (nearest even), lo in the low half: a register of wgmma's A operand
{fn} unsigned pk_pack_bf16(float lo, float hi) {{
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}}""", ()),
}


def supported(target) -> str:
    """Why ``target`` (cuda or nvptx: nvptx_hopper.py) cannot compile Hopper operations, or '' if it can."""
    if target.attrs["arch"] != "sm_90a":
        return (f"they need the architecture-specific target sm_90a (wgmma and setmaxnreg exist only on sm_90 "
                f"parts), not {target.attrs['arch']}: build for '{target.kind} -arch=sm_90a'")
    return ""


def tmap_param(name: str) -> str:
    return f"pk_tm_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"


def hidden_params(fn: N.Function):
    hf = fn.hopper
    if hf is None:
        return []
    return [f"const __grid_constant__ pk_tmap {tmap_param(n)}" for n in hf.tensor_maps]


def launch_bounds(fn: N.Function) -> str:
    hf = fn.hopper
    return f"__launch_bounds__({H.WARPGROUP * hf.warpgroups}, 1) " if hf is not None and hf.warpgroups else ""


def declarations(em) -> None:
    """Barrier sets and accumulators, at the top of the kernel body."""
    hf = em.fn.hopper
    if hf is None:
        return
    if hf.tensor_maps or hf.mbarriers or hf.accs:
        for h in ("pk_tmap", "pk_smem", "pk_mbar_wait", "pk_wg_desc"):
            em.unit.helper(h)
    for name in hf.swizzled:
        arr = em.fn.arrays[name]
        if not arr.dynamic:
            raise em.fail(f"the swizzled tile '{name}'", "a shared array that tensor copies write or wgmma reads is "
                          "declared with pk.shared_dynamic on cuda (its 1024-byte alignment comes from the launch's "
                          "dynamic shared memory)")
        t = em.d.storage_type(arr.elem)
        em.line(f"{em.names[name]} = ({t}*)(((unsigned long long){em.names[name]} + 1023ull) & ~1023ull);")
    for name, n in hf.mbarriers.items():
        em.line(f"__shared__ __align__(8) unsigned long long {em.names[name]}[{n}];")
    for name, t in hf.accs.items():
        em.line(f"float {em.names[name]}[{t.n // 2}];")
    for name in hf.vecs:
        em.line(f"float {em.names[name]}[{H.VEC_SLOTS}] = {{0.0f, 0.0f}};")
    _mark_fences(em.fn.body, hf)


def _addr(em, arr: str, off) -> str:
    return f"pk_smem(&{em.names[arr]}[{off}])"


def emit_c(em, s: N.HopperOp) -> None:
    """``s`` as CUDA C into the KernelEmitter ``em``."""
    a = [em.expr(x) for x in s.args]
    op = s.op
    if op.startswith("mbar_"):
        bar = f"pk_smem(&{em.names[s.names[0]]}[{a[0]}])"
        if op == "mbar_init":
            em.line(f'asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"({bar}), "r"({a[1]}) : "memory");')
            em.line('asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");')
        elif op == "mbar_arrive":
            em.line(f'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"({bar}) : "memory");')
        elif op == "mbar_arrive_tx":
            em.line(f'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"({bar}), '
                    f'"r"({a[1]}) : "memory");')
        else:
            em.line(f"pk_mbar_wait({bar}, (unsigned)({a[1]}) & 1u);")
    elif op == "tma_load":
        dst, tmap, bars = s.names
        em.line(f'asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes '
                f'[%0], [%1, {{%2, %3}}], [%4];" :: "r"({_addr(em, dst, a[0])}), "l"(&{tmap_param(tmap)}), '
                f'"r"({a[2]}), "r"({a[1]}), "r"(pk_smem(&{em.names[bars]}[{a[3]}])) : "memory");')
    elif op == "wg_fill":
        acc = em.names[s.names[0]]
        n = em.fn.hopper.accs[s.names[0]].n // 2
        em.line("#pragma unroll")
        em.line(f"for (int pk_i = 0; pk_i < {n}; ++pk_i) {acc}[pk_i] = {a[0]};")
    elif op in H.WGMMA_OPS:
        _wgmma(em, s, a)
    elif op == "wg_set":
        em.line(f"{em.names[s.names[0]]}[{a[0]}] = {a[1]};")
    elif op in ("wg_row_max", "wg_row_sum"):
        _row_reduce(em, s)
    elif op == "wgmma_commit":
        em.line('asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");')
    elif op == "wgmma_wait":
        em.line(f'asm volatile("wgmma.wait_group.sync.aligned {int(s.args[0].value)};" ::: "memory");')
    elif op == "wg_store":
        _store(em, s, a)
    elif op in H.NAMED_OPS:  # the count is a constant (ir.hopper.check_named_count); memory is ordered by it
        kind = "sync" if op == "named_barrier" else "arrive"
        em.line(f'asm volatile("bar.{kind} %0, {int(s.args[1].value)};" :: "r"((unsigned)({a[0]})) : "memory");')
    else:  # setmaxnreg_inc / _dec
        em.line(f'asm volatile("setmaxnreg.{op[-3:]}.sync.aligned.u32 {int(s.args[0].value)};");')
    if getattr(s, "fence_after", False):  # for the wgmma loop that follows (_mark_fences)
        em.line('asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')


def _wgmma(em, s: N.HopperOp, a) -> None:
    """``wgmma.mma_async`` m64nNk16: A by descriptor or from registers (an accumulator's columns a_off ..
    a_off + 15 packed to 16 bits: its registers a_off / 2 .. a_off / 2 + 7 in order are the A fragment's);
    B K-major (``pk.wgmma``) or MN-major (``pk.wgmma_kn``: the transpose bit, panels ``panel`` apart)."""
    acc, ta, tb = s.names
    hf = em.fn.hopper
    at = hf.accs[acc]
    elem = em.fn.arrays[tb].elem.name
    regs = at.n // 2
    outs = ", ".join(f"%{i}" for i in range(regs))
    cons = ", ".join(f'"+f"({em.names[acc]}[{i}])' for i in range(regs))
    if s.op == "wgmma_kn":
        panel_bytes = int(s.args[2].value) * 2
        em.unit.helper("pk_wg_desc_mn")
        b_desc, trans_b = f"pk_wg_desc_mn({_addr(em, tb, a[1])}, {panel_bytes}u)", 1
    else:
        b_desc, trans_b = f"pk_wg_desc({_addr(em, tb, a[1])})", 0
    if not getattr(s, "no_fence", False):
        em.line('asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')
    if ta in hf.accs:  # A from registers
        em.unit.helper(f"pk_pack_{elem}")
        src, base = em.names[ta], f"(({a[0]}) >> 1)"
        a_ops = [f'"r"(pk_pack_{elem}({src}[{base} + {2 * k}], {src}[{base} + {2 * k + 1}]))' for k in range(4)]
        a_text = f"{{%{regs}, %{regs + 1}, %{regs + 2}, %{regs + 3}}}"
        ins = ", ".join(a_ops + [f'"l"({b_desc})'])
        tail, b_at = f"p, 1, 1, {trans_b}", regs + 4
    else:
        a_text, b_at = f"%{regs}", regs + 1
        ins = f'"l"(pk_wg_desc({_addr(em, ta, a[0])})), "l"({b_desc})'
        tail = f"p, 1, 1, 0, {trans_b}"
    em.line(f'asm volatile("{{\\n.reg .pred p;\\nsetp.eq.u32 p, 1, 1;\\nwgmma.mma_async.sync.aligned.m64n{at.n}k16.f32.'
            f'{elem}.{elem} {{{outs}}}, {a_text}, %{b_at}, {tail};\\n}}\\n" : {cons} : {ins} : "memory");')


def _mark_fences(stmts, hf) -> None:
    """Where ``wgmma.fence`` goes (it orders the warpgroup's register accesses before a wgmma reads or adds
    into registers; consecutive wgmmas into one accumulator are ordered without it). A wgmma after another
    of the same block, with only scalar assignments (reading no warpgroup register), commits and waits in
    between, needs none (``no_fence``); neither do the wgmmas of a loop made only of such statements, when
    the fence goes after the Hopper operation before the loop (``fence_after``) instead of into every
    iteration. A wgmma with A from registers keeps its fence: the conversion just before it writes A."""
    fenced, last_op = False, None
    for s in stmts:
        if isinstance(s, N.HopperOp) and s.op in H.WGMMA_OPS:
            regs_a = s.names[1] in hf.accs
            s.no_fence = fenced and not regs_a
            fenced, last_op = True, s
        elif _fence_safe(s):
            continue
        elif isinstance(s, N.For) and last_op is not None and _wgmma_loop(s.body, hf):
            for x in s.body:
                if isinstance(x, N.HopperOp) and x.op in H.WGMMA_OPS:
                    x.no_fence = True
            if not fenced:
                last_op.fence_after = True
            fenced = True
        else:
            fenced = False
            last_op = s if isinstance(s, N.HopperOp) else None
            for body in ((s.then, s.orelse) if isinstance(s, N.If) else (s.body,) if isinstance(s, (N.For, N.While))
                         else ()):
                _mark_fences(body, hf)


def _fence_safe(s) -> bool:
    """Statements that touch no register a wgmma reads or writes."""
    if isinstance(s, N.HopperOp):
        return s.op in ("wgmma_commit", "wgmma_wait")
    return isinstance(s, N.Assign) and not any(isinstance(x, N.WgReg) for x in N.walk_expr(s.value))


def _wgmma_loop(body, hf) -> bool:
    """A loop body of descriptor-operand wgmmas and fence-safe statements only."""
    return any(isinstance(s, N.HopperOp) and s.op in H.WGMMA_OPS for s in body) and all(
        (isinstance(s, N.HopperOp) and s.op in H.WGMMA_OPS and s.names[1] not in hf.accs) or _fence_safe(s)
        for s in body)


def _row_reduce(em, s: N.HopperOp) -> None:
    """``vec[i] = max / sum over j of acc[i, j]`` (ir.hopper.reference_row_max / _sum): each work-item folds
    its columns of the row in register order, then the row's four holders (lanes 4r .. 4r + 3) combine by
    two butterfly shuffles, (s0 + s1) + (s2 + s3) in every lane."""
    vec, acc = (em.names[x] for x in s.names)
    n = em.fn.hopper.accs[s.names[1]].n
    f = "fmaxf({a}, {b})" if s.op == "wg_row_max" else "{a} + {b}"
    em.line("#pragma unroll")
    em.line(f"for (int pk_s = 0; pk_s < {H.VEC_SLOTS}; ++pk_s) {{")
    em.depth += 1
    em.line(f"float pk_v = {acc}[2 * pk_s];")
    em.line(f"pk_v = {f.format(a='pk_v', b=f'{acc}[2 * pk_s + 1]')};")
    em.line("#pragma unroll")
    em.line(f"for (int pk_j = 1; pk_j < {n // 8}; ++pk_j) {{")
    em.depth += 1
    for d in (0, 1):
        em.line(f"pk_v = {f.format(a='pk_v', b=f'{acc}[4 * pk_j + 2 * pk_s + {d}]')};")
    em.depth -= 1
    em.line("}")
    for x in (1, 2):
        em.line(f"pk_v = {f.format(a='pk_v', b=f'__shfl_xor_sync(0xffffffffu, pk_v, {x})')};")
    em.line(f"{vec}[pk_s] = pk_v;")
    em.depth -= 1
    em.line("}")


def _store(em, s: N.HopperOp, a) -> None:
    """The accumulator's column pairs (4j, 4j+1) and (4j+2, 4j+3) are adjacent in memory: stored as one 32-bit
    (f16) or 64-bit (f32) access where ``off`` and ``ld`` are even (the buffer is aligned to two elements:
    the kernel's ``vector_align``), element by element otherwise."""
    buf, acc = s.names
    at = em.fn.hopper.accs[acc]
    p = em.fn.param(buf)
    out, name = p.type.elem.name, em.names[buf]
    if out == "f16":
        em.unit.helper("pk_f2h")
    conv = "pk_f2h" if out == "f16" else ""
    pair_t = "unsigned" if out == "f16" else "float2"
    v = em.names[acc]

    def pair(k):
        if out == "f16":
            return f"(unsigned)pk_f2h({v}[4 * pk_j + {k}]) | ((unsigned)pk_f2h({v}[4 * pk_j + {k + 1}]) << 16)"
        return f"make_float2({v}[4 * pk_j + {k}], {v}[4 * pk_j + {k + 1}])"
    em.line("{")
    em.depth += 1
    em.line(f"int pk_t = {_TID} & 127, pk_w = pk_t >> 5, pk_l = pk_t & 31;")
    em.line(f"long long pk_ld = (long long)({a[1]}), pk_off = (long long)({a[0]});")
    em.line("long long pk_r = (long long)(pk_w * 16 + (pk_l >> 2)) * pk_ld + pk_off, pk_r8 = pk_r + 8ll * pk_ld;")
    pairs = [f"*({pair_t}*)&{name}[pk_r + pk_c] = {pair(0)};", f"*({pair_t}*)&{name}[pk_r8 + pk_c] = {pair(2)};"]
    singles = [f"{name}[{row} + pk_c + {dc}] = {conv}({v}[4 * pk_j + {k}]);"
               for k, (row, dc) in enumerate((("pk_r", 0), ("pk_r", 1), ("pk_r8", 0), ("pk_r8", 1)))]
    for head, body in (("if (((pk_off | pk_ld) & 1) == 0) {", pairs), ("} else {", singles)):
        em.line(head)
        em.depth += 1
        em.line("#pragma unroll")
        em.line(f"for (int pk_j = 0; pk_j < {at.n // 8}; ++pk_j) {{")
        em.depth += 1
        em.line("int pk_c = 8 * pk_j + 2 * (pk_l & 3);")
        for line in body:
            em.line(line)
        em.depth -= 1
        em.line("}")
        em.depth -= 1
    em.line("}")
    em.depth -= 1
    em.line("}")


_TID = "(int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
