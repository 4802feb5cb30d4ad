// polykern webgpu kernel 'math_casts'

override pk_block_x: u32 = 1u;
override pk_block_y: u32 = 1u;
override pk_block_z: u32 = 1u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> bits: array<u32>;

struct PkArgs {
    n: i32,
    scale: f32,
    flag: u32,
}
@group(0) @binding(3) var<uniform> pk_args: PkArgs;

struct PkLaunch {
    group_base: vec4<u32>,
    grid: vec4<u32>,
}
@group(0) @binding(4) var<uniform> pk_launch: PkLaunch;

fn pk_fma(a: f32, b: f32, c: f32) -> f32 {
    let p = a * b;
    let ah = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
    let bh = bitcast<f32>(bitcast<u32>(b) & 0xfffff000u);
    let al = a - ah;
    let bl = b - bh;
    let e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    let s = p + c;
    let v = s - p;
    let t = (p - (s - v)) + (c - v);
    let ok = abs(p) < 1.0e38f && abs(p) > 1.0e-20f && abs(c) < 1.0e38f;
    return select(fma(a, b, c), s + (t + e), ok);
}

fn pk_fmod_f32(x: f32, y: f32) -> f32 {
    let bx = bitcast<u32>(x) & 0x7fffffffu;
    let by = bitcast<u32>(y) & 0x7fffffffu;
    if bx >= 0x7f800000u || by > 0x7f800000u || by == 0u {
        return bitcast<f32>(0x7fc00000u);
    }
    if bx < by {
        return x;
    }
    let ax = bitcast<f32>(bx);
    let ay = bitcast<f32>(by);
    var t = ay;
    loop {
        let t2 = t + t;
        if t2 > ax {
            break;
        }
        t = t2;
    }
    var r = ax;
    loop {
        if r >= t {
            r = r - t;
        }
        if t == ay {
            break;
        }
        t = t * 0.5f;
    }
    return bitcast<f32>(bitcast<u32>(r) | (bitcast<u32>(x) & 0x80000000u));
}

fn pk_i32_from_f32(x: f32) -> i32 {
    let nan = (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
    return select(select(i32(x), 2147483647i, x >= 2147483648.0f), 0i, nan);
}

fn pk_log2_f32(x: f32) -> f32 {
    let small = x < 1.17549435e-38f;
    return select(log2(x), log2(x * 16777216.0f) - 24.0f, small);
}

fn pk_log_f32(x: f32) -> f32 {
    let small = x < 1.17549435e-38f;
    return select(log(x), log(x * 16777216.0f) - 16.635532f, small);
}

fn pk_pow_f32(x: f32, y: f32) -> f32 {
    let ax = abs(x);
    let inf = bitcast<f32>(0x7f800000u);
    let nan = bitcast<f32>(0x7fc00000u);
    let y_neg = y < 0.0f;
    let y_inf = (bitcast<u32>(y) & 0x7fffffffu) == 0x7f800000u;
    let x_inf = (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
    let any_nan = (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u || (bitcast<u32>(y) & 0x7fffffffu) > 0x7f800000u;
    var r = pow(ax, y);
    r = select(r, select(0.0f, inf, (ax < 1.0f) == y_neg), y_inf);
    r = select(r, select(0.0f, inf, y_neg), ax == 0.0f);
    r = select(r, select(inf, 0.0f, y_neg), x_inf);
    let y_int = floor(y) == y;
    let h = y * 0.5f;
    let y_odd = y_int && floor(h) != h;
    r = select(r, -r, (bitcast<u32>(x) & 0x80000000u) != 0u && y_odd);
    r = select(r, nan, x < 0.0f && !x_inf && !y_int);
    r = select(r, nan, any_nan);
    r = select(r, 1.0f, x == -1.0f && y_inf);
    return select(r, 1.0f, y == 0.0f || x == 1.0f);
}

@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
fn math_casts(@builtin(local_invocation_id) pk_local_id: vec3<u32>, @builtin(workgroup_id) pk_group_id: vec3<u32>) {
    let n = pk_args.n;
    let scale = pk_args.scale;
    let flag = (pk_args.flag != 0u);
    var i: i32;
    var v: f32;
    var u: u32;
    i = i32((pk_launch.group_base.x + pk_group_id.x) * pk_block_x + pk_local_id.x);
    if i >= n {
        return;
    }
    v = abs(x[i]);
    v = ((((((((((sqrt(v) + inverseSqrt(v)) + exp(v)) + exp2(v)) + sin(v)) + cos(v)) + tanh(v)) + abs(v)) + floor(v)) + ceil(v)) + pk_log_f32(v + 1.0f)) + pk_log2_f32(v + 1.0f);
    v = pk_fma(v, scale, pk_pow_f32(2.0f, 0.5f));
    v = max(min(v, 1.0e+30f), -1.0e+30f);
    v = select(floor(v / 3.0f), pk_fmod_f32(v, 7.5f), flag);
    y[i] = v / 3.0f;
    u = u32(i);
    u = (u << 3u) | (u >> (u32(i & 7i) & 31u));
    u = u ^ u32(pk_i32_from_f32(f32(u)));
    bits[i] = u + u32(i << 3u);
    bits[i] = bits[i] - (0u - u32(bool(i)));
}
