// polykern webgpu kernel 'reduce_sum'

override pk_block_x: u32 = 1u;
override pk_block_y: u32 = 1u;
override pk_block_z: u32 = 1u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

struct PkArgs {
    n: i32,
}
@group(0) @binding(2) var<uniform> pk_args: PkArgs;

struct PkLaunch {
    group_base: vec4<u32>,
    grid: vec4<u32>,
}
@group(0) @binding(3) var<uniform> pk_launch: PkLaunch;

var<workgroup> tile: array<f32, 64>;

@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
fn reduce_sum(@builtin(local_invocation_id) pk_local_id: vec3<u32>, @builtin(workgroup_id) pk_group_id: vec3<u32>) {
    let n = pk_args.n;
    var lid: i32;
    var i: i32;
    var s: i32;
    lid = i32(pk_local_id.x);
    i = i32((pk_launch.group_base.x + pk_group_id.x) * pk_block_x + pk_local_id.x);
    tile[lid] = select(0.0f, x[i], (i < n));
    storageBarrier();
    workgroupBarrier();
    s = i32(pk_block_x) / 2i;
    while s > 0i {
        if lid < s {
            tile[lid] = tile[lid] + tile[lid + s];
        }
        storageBarrier();
        workgroupBarrier();
        s = s >> 1u;
    }
    if lid == 0i {
        out[i32(pk_launch.group_base.x + pk_group_id.x)] = tile[0i];
    }
}
