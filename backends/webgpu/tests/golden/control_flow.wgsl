// polykern webgpu kernel 'control_flow'

override pk_block_x: u32 = 1u;
override pk_block_y: u32 = 1u;
override pk_block_z: u32 = 1u;

@group(0) @binding(0) var<storage, read> flags: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<i32>;

struct PkArgs {
    n: i32,
}
@group(0) @binding(2) var<uniform> pk_args: PkArgs;

struct PkLaunch {
    group_base: vec4<u32>,
    grid: vec4<u32>,
}
@group(0) @binding(3) var<uniform> pk_launch: PkLaunch;

fn pk_abs_i32(x: i32) -> i32 {
    return bitcast<i32>(select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0i));
}

@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
fn control_flow(@builtin(local_invocation_id) pk_local_id: vec3<u32>, @builtin(workgroup_id) pk_group_id: vec3<u32>) {
    let n = pk_args.n;
    var i: i32;
    var k: i32;
    var acc: i32;
    var j: u32;
    var ok: bool;
    var _num0: bool;
    var _num1: u32;
    var _num2: u32;
    i = i32((pk_launch.group_base.x + pk_group_id.x) * pk_block_x + pk_local_id.x);
    if i >= n {
        return;
    }
    acc = 0i;
    for (k = 0i; k < (i + 3i); k = k + 1i) {
        _num0 = k < 0i;
        _num1 = u32(k);
        _num2 = select(_num1, 0u - _num1, _num0) % 3u;
        if i32(select(_num2, 0u - _num2, _num0)) == 1i {
            continue;
        }
        if k > 40i {
            break;
        }
        acc = acc + k;
    }
    for (j = 10u; j > 0u; j = j - 2u) {
        acc = acc - i32(j);
    }
    ok = (i < n) && (flags[i] != 0u);
    if ok || (i == 0i) {
        acc = acc * 2i;
    } else if i == 1i {
        acc = (-2147483647i - 1i);
    } else if i == 2i {
        acc = -acc;
    } else {
        acc = ~acc;
    }
    while true {
        acc = acc / 2i;
        if pk_abs_i32(acc) < 1000i {
            break;
        }
    }
    out[i] = acc;
}
