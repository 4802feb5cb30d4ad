// polykern webgpu kernel 'loop'

override pk_block_x: u32 = 1u;
override pk_block_y: u32 = 1u;
override pk_block_z: u32 = 1u;

@group(0) @binding(0) var<storage, read_write> array_1: array<i32>;

struct PkArgs {
    select_1: i32,
}
@group(0) @binding(1) var<uniform> pk_args: PkArgs;

struct PkLaunch {
    group_base: vec4<u32>,
    grid: vec4<u32>,
}
@group(0) @binding(2) var<uniform> pk_launch: PkLaunch;

@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
fn loop_1(@builtin(local_invocation_id) pk_local_id: vec3<u32>, @builtin(workgroup_id) pk_group_id: vec3<u32>) {
    let select_1 = pk_args.select_1;
    var loop_1: i32;
    var min_1: i32;
    var upk_args_1: i32;
    var fn_1: i32;
    loop_1 = i32((pk_launch.group_base.x + pk_group_id.x) * pk_block_x + pk_local_id.x);
    min_1 = min(loop_1, 5i);
    upk_args_1 = min_1 + select_1;
    fn_1 = select_1 + upk_args_1;
    array_1[loop_1] = fn_1;
}
