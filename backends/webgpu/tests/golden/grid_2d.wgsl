// polykern webgpu kernel 'grid_2d'

override pk_block_x: u32 = 1u;
override pk_block_y: u32 = 1u;
override pk_block_z: u32 = 1u;

@group(0) @binding(0) var<storage, read_write> out: array<i32>;

struct PkArgs {
    w: i32,
    h: i32,
}
@group(0) @binding(1) var<uniform> pk_args: PkArgs;

struct PkLaunch {
    group_base: vec4<u32>,
    grid: vec4<u32>,
}
@group(0) @binding(2) var<uniform> pk_launch: PkLaunch;

@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
fn grid_2d(@builtin(local_invocation_id) pk_local_id: vec3<u32>, @builtin(workgroup_id) pk_group_id: vec3<u32>) {
    let w = pk_args.w;
    let h = pk_args.h;
    var x: i32;
    var y: i32;
    x = i32((pk_launch.group_base.x + pk_group_id.x) * pk_block_x + pk_local_id.x);
    y = (i32(pk_launch.group_base.y + pk_group_id.y) * i32(pk_block_y)) + i32(pk_local_id.y);
    if (x < w) && (y < h) {
        out[(y * w) + x] = (i32(pk_launch.grid.x) * 1000i) + i32(pk_launch.grid.y);
    }
}
