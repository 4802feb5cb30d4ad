// polykern webgpu kernel 'saxpy'

override pk_block_x: u32 = 1u;
override pk_block_y: u32 = 1u;
override pk_block_z: u32 = 1u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

struct PkArgs {
    n: i32,
    a: f32,
}
@group(0) @binding(2) var<uniform> pk_args: PkArgs;

struct PkLaunch {
    group_base: vec4<u32>,
    grid: vec4<u32>,
}
@group(0) @binding(3) var<uniform> pk_launch: PkLaunch;

@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
fn saxpy(@builtin(local_invocation_id) pk_local_id: vec3<u32>, @builtin(workgroup_id) pk_group_id: vec3<u32>) {
    let n = pk_args.n;
    let a = pk_args.a;
    var i: i32;
    i = i32((pk_launch.group_base.x + pk_group_id.x) * pk_block_x + pk_local_id.x);
    if i < n {
        y[i] = (a * x[i]) + y[i];
    }
}
