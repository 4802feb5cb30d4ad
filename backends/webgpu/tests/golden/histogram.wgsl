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

@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
fn histogram(@builtin(local_invocation_id) pk_local_id: vec3<u32>, @builtin(workgroup_id) pk_group_id: vec3<u32>) {
    let n = pk_args.n;
    let nbins = pk_args.nbins;
    var i: i32;
    var b: i32;
    var _num0: bool;
    var _num1: u32;
    var _num2: u32;
    var _num3: u32;
    var _num4: u32;
    i = i32((pk_launch.group_base.x + pk_group_id.x) * pk_block_x + pk_local_id.x);
    if i >= n {
        return;
    }
    b = data[i];
    _num0 = b < 0i;
    _num1 = u32(b);
    _num2 = u32(nbins);
    _num3 = select(_num2, 0u - _num2, (nbins < 0i));
    _num4 = select(_num1, 0u - _num1, _num0) % select(_num3, 1u, (_num3 == 0u));
    b = i32(select(_num4, 0u - _num4, _num0));
    if b < 0i {
        b = b + nbins;
    }
    atomicAdd(&hist[b], 1u);
}
