"""Row sums of an n_rows x n matrix, one subgroup per row (the CUDA warp-per-row / Triton row-reduction
pattern): each lane adds a strided slice of its row (consecutive lanes read consecutive elements, four loads
in flight), then one ``pk.subgroup_add`` gives the row's sum. The row index comes from ``pk.subgroup_id()``, so it is the
same in every lane of a subgroup and the collective may stand under ``while row < n_rows``
(docs/language.md "Subgroups": subgroup-uniform control flow). The rows are visited grid-stride, so any
grid is correct; ``groups_for`` gives the one that runs each subgroup one row (32-lane warps on CUDA,
8-lane slices on the CPU)."""
import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32

BLOCK = 256
RTOL = 1e-5  # float32 sums in lane order vs float64


@pk.kernel
def row_sums(n_rows: i32, n: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    per_group = (pk.local_size(0) + pk.subgroup_size() - 1) // pk.subgroup_size()
    row = pk.group_id(0) * per_group + pk.subgroup_id()
    size = pk.subgroup_size()
    while row < n_rows:  # the same in every lane of a subgroup: a collective may stand inside
        base = row * n
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        k = pk.subgroup_local_id()
        while k + 3 * size < n:  # four independent loads in flight per lane; differs between lanes
            a0 += x[base + k]
            a1 += x[base + k + size]
            a2 += x[base + k + 2 * size]
            a3 += x[base + k + 3 * size]
            k += 4 * size
        while k < n:
            a0 += x[base + k]
            k += size
        s = pk.subgroup_add((a0 + a1) + (a2 + a3))
        if pk.subgroup_local_id() == 0:
            out[row] = s
        row += pk.num_groups(0) * per_group


def groups_for(n_rows, block=BLOCK, subgroup_size=8):
    """The grid that gives each subgroup one row."""
    per_group = block // subgroup_size
    return max(1, (n_rows + per_group - 1) // per_group)


def run(mod, rng, n_rows=1000, n=777, block=BLOCK):
    x = rng.standard_normal((n_rows, n)).astype(np.float32)
    out = np.zeros(n_rows, np.float32)
    mod["row_sums"](n_rows, n, x, out, grid=groups_for(n_rows, block), block=block)
    expect = x.astype(np.float64).sum(1)
    err = np.abs(out - expect).max()
    tol = RTOL * np.abs(x).astype(np.float64).sum(1).max()
    assert err <= tol, (err, tol)
    return f"row_reduction: {n_rows} row sums of {n} elements OK (max error {err:.1e} <= {tol:.1e})"


if __name__ == "__main__":
    from _run import main

    raise SystemExit(main([row_sums], run))
