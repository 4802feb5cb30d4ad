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

@compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
fn math_casts(@builtin(local_invocation_id) pk_local_id: vec3<u32>, @builtin(workgroup_id) pk_group_id: vec3<u32>) {
    let n = pk_args.n;
    let scale = pk_args.scale;
    let flag = (pk_args.flag != 0u);
    var i: i32;
    var v: f32;
    var u: u32;
    var _num0: f32;
    var _num1: bool;
    var _num2: f32;
    var _num3: f32;
    var _num4: bool;
    var _num5: f32;
    var _num6: f32;
    var _num7: bool;
    var _num8: bool;
    var _num9: bool;
    var _num10: f32;
    var _num11: bool;
    var _num12: f32;
    var _num13: f32;
    var _num14: f32;
    var _num15: u32;
    var _num16: u32;
    var _num17: f32;
    var _num18: f32;
    var _num19: f32;
    var _num20: f32;
    var _num21: f32;
    var _num22: f32;
    var _num23: bool;
    i = i32((pk_launch.group_base.x + pk_group_id.x) * pk_block_x + pk_local_id.x);
    if i >= n {
        return;
    }
    v = abs(x[i]);
    _num0 = v + 1.0f;
    _num1 = _num0 < 1.1754944e-38f;
    _num2 = log(select(_num0, _num0 * 16777216.0f, _num1));
    _num3 = v + 1.0f;
    _num4 = _num3 < 1.1754944e-38f;
    _num5 = log2(select(_num3, _num3 * 16777216.0f, _num4));
    v = ((((((((((sqrt(v) + inverseSqrt(v)) + exp(v)) + exp2(v)) + sin(v)) + cos(v)) + tanh(v)) + abs(v)) + floor(v)) + ceil(v)) + select(_num2, _num2 - 16.635532f, _num1)) + select(_num5, _num5 - 24.0f, _num4);
    var pk_t1: f32 = 2.0f;
    _num6 = abs(pk_t1);
    _num7 = 0.5f < 0.0f;
    _num8 = (bitcast<u32>(0.5f) & 2147483647u) == 2139095040u;
    _num9 = (bitcast<u32>(2.0f) & 2147483647u) == 2139095040u;
    _num10 = select(select(select(pow(_num6, 0.5f), select(0.0f, bitcast<f32>(2139095040u), ((_num6 < 1.0f) == _num7)), _num8), select(0.0f, bitcast<f32>(2139095040u), _num7), (_num6 == 0.0f)), select(bitcast<f32>(2139095040u), 0.0f, _num7), _num9);
    var pk_t2: f32 = 0.5f;
    _num11 = floor(pk_t2) == 0.5f;
    var pk_t3: f32 = 0.5f;
    _num12 = pk_t3 * 0.5f;
    v = pk_fma(v, scale, select(select(select(select(select(_num10, -_num10, (((bitcast<u32>(2.0f) & 2147483648u) != 0u) & (_num11 & (!(floor(_num12) == _num12))))), bitcast<f32>(2143289344u), (((2.0f < 0.0f) & (!_num9)) & (!_num11))), bitcast<f32>(2143289344u), (((bitcast<u32>(2.0f) & 2147483647u) > 2139095040u) | ((bitcast<u32>(0.5f) & 2147483647u) > 2139095040u))), 1.0f, ((2.0f == -1.0f) & _num8)), 1.0f, ((0.5f == 0.0f) | (2.0f == 1.0f))));
    v = max(min(v, 1.0e+30f), -1.0e+30f);
    _num13 = v;
    _num14 = 7.5f;
    _num15 = bitcast<u32>(_num13) & 2147483647u;
    _num16 = bitcast<u32>(_num14) & 2147483647u;
    _num17 = select(bitcast<f32>(2143289344u), _num13, ((_num15 < _num16) & (_num16 <= 2139095040u)));
    if ((_num15 >= _num16) & (_num15 < 2139095040u)) & (_num16 != 0u) {
        _num18 = bitcast<f32>(_num15);
        _num19 = bitcast<f32>(_num16);
        _num20 = _num19;
        while true {
            _num21 = _num20 + _num20;
            if _num21 > _num18 {
                break;
            }
            _num20 = _num21;
        }
        _num22 = _num18;
        while true {
            if _num22 >= _num20 {
                _num22 = _num22 - _num20;
            }
            _num20 = _num20 * 0.5f;
            if _num20 < _num19 {
                break;
            }
        }
        _num17 = bitcast<f32>(bitcast<u32>(_num22) | (bitcast<u32>(_num13) & 2147483648u));
    }
    v = select(floor(v / 3.0f), _num17, flag);
    y[i] = v / 3.0f;
    u = u32(i);
    u = (u << 3u) | (u >> (u32(i & 7i) & 31u));
    _num23 = (f32(u) >= -2147483600.0f) & (f32(u) < 2147483600.0f);
    u = u ^ u32(select(select(select(select(0i, (-2147483647i - 1i), (f32(u) < -2147483600.0f)), 2147483647i, (f32(u) >= 2147483600.0f)), i32(select(0.0f, f32(u), _num23)), _num23), 0i, ((bitcast<u32>(f32(u)) & 2147483647u) > 2139095040u)));
    bits[i] = u + u32(i << 3u);
    bits[i] = bits[i] - (0u - u32(bool(i)));
}
