// polykern webgpu kernel 'histogram'

override pk_block_x: u32 = 1u;
override pk_block_y: u32 = 1u;
override pk_block_z: u32 = 1u;

@group(0) @binding(0) var<storage, read> data: array<i32>;
@group(0) @binding(1) var<storage, read_write> hist: array<atomic<u32>>;

struct PkArgs {
    n: i32,
    nbins: i32,
}
@group(0) @binding(2) var<uniform> pk_args: PkArgs;

struct PkLaunch {
    group_base: vec4<u32>,
    grid: vec4<u32>,
}
@group(0) @binding(3) var<uniform> pk_launch: PkLaunch;

fn pk_rem_i32(a: i32, b: i32) -> i32 {
    let ua = select(bitcast<u32>(a), 0u - bitcast<u32>(a), a < 0i);
    let ub = select(bitcast<u32>(b), 0u - bitcast<u32>(b), b < 0i);
    let r = select(ua % max(ub, 1u), 0u, ub == 0u);
    return bitcast<i32>(select(r, 0u - r, a < 0i));
}

@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
fn histogram(@builtin(local_invocation_id) pk_local_id: vec3<u32>, @builtin(workgroup_id) pk_group_id: vec3<u32>) {
    let n = pk_args.n;
    let nbins = pk_args.nbins;
    var i: i32;
    var b: i32;
    i = i32((pk_launch.group_base.x + pk_group_id.x) * pk_block_x + pk_local_id.x);
    if i >= n {
        return;
    }
    b = data[i];
    b = pk_rem_i32(b, nbins);
    if b < 0i {
        b = b + nbins;
    }
    atomicAdd(&hist[b], 1u);
}
