// polykern webgpu kernel 'atomics_mix'

override pk_block_x: u32 = 1u;
override pk_block_y: u32 = 1u;
override pk_block_z: u32 = 1u;

@group(0) @binding(0) var<storage, read_write> ci: array<atomic<i32>>;
@group(0) @binding(1) var<storage, read_write> cf: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> res: array<i32>;

struct PkLaunch {
    group_base: vec4<u32>,
    grid: vec4<u32>,
}
@group(0) @binding(3) var<uniform> pk_launch: PkLaunch;

var<workgroup> counter: array<atomic<i32>, 1>;

@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
fn atomics_mix(@builtin(local_invocation_id) pk_local_id: vec3<u32>, @builtin(workgroup_id) pk_group_id: vec3<u32>) {
    var i: i32;
    var old: i32;
    var fo: f32;
    var priv_1: array<f32, 4>;
    i = i32((pk_launch.group_base.x + pk_group_id.x) * pk_block_x + pk_local_id.x);
    if i32(pk_local_id.x) == 0i {
        atomicStore(&counter[0i], 0i);
    }
    storageBarrier();
    workgroupBarrier();
    old = atomicAdd(&ci[0i], 1i);
    atomicMin(&ci[1i], i);
    atomicMax(&ci[2i], i);
    atomicExchange(&ci[3i], i);
    let pk_t1 = i + 1i;
    var pk_t2: i32;
    loop {
        let pk_t3 = atomicCompareExchangeWeak(&ci[4i], i, pk_t1);
        if (pk_t3.exchanged || (pk_t3.old_value != i)) {
            pk_t2 = pk_t3.old_value;
            break;
        }
    }
    var pk_t4: u32 = atomicLoad(&cf[0i]);
    loop {
        let pk_t5 = atomicCompareExchangeWeak(&cf[0i], pk_t4, bitcast<u32>(bitcast<f32>(pk_t4) + 1.0f));
        if pk_t5.exchanged { break; }
        pk_t4 = pk_t5.old_value;
    }
    fo = bitcast<f32>(pk_t4);
    let pk_t6 = f32(i);
    var pk_t7: u32 = atomicLoad(&cf[1i]);
    loop {
        let pk_t8 = atomicCompareExchangeWeak(&cf[1i], pk_t7, bitcast<u32>(min(bitcast<f32>(pk_t7), pk_t6)));
        if pk_t8.exchanged { break; }
        pk_t7 = pk_t8.old_value;
    }
    let pk_t9 = f32(i);
    var pk_t10: u32 = atomicLoad(&cf[2i]);
    loop {
        let pk_t11 = atomicCompareExchangeWeak(&cf[2i], pk_t10, bitcast<u32>(max(bitcast<f32>(pk_t10), pk_t9)));
        if pk_t11.exchanged { break; }
        pk_t10 = pk_t11.old_value;
    }
    atomicAdd(&counter[0i], 1i);
    priv_1[0i] = f32(old);
    let pk_t12 = priv_1[0i];
    priv_1[0i] = pk_t12 + 2.0f;
    fo = fo + pk_t12;
    storageBarrier();
    workgroupBarrier();
    if i32(pk_local_id.x) == 0i {
        res[i32(pk_launch.group_base.x + pk_group_id.x)] = atomicLoad(&counter[0i]);
    }
    atomicStore(&cf[3i], bitcast<u32>(bitcast<f32>(atomicLoad(&cf[3i])) + priv_1[0i]));
}
