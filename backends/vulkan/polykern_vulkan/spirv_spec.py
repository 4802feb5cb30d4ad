"""The slice of the SPIR-V specification this backend emits: opcode numbers, enumerants,
and the operand grammar of every instruction we write (used by the disassembler).

Values are transcribed from the SPIR-V 1.6 unified specification (sections 3.x) and the
GLSL.std.450 extended instruction set. Only what the Vulkan emitter uses is listed; the
disassembler refuses an opcode that is not here, so the table and the emitter stay in sync.
"""
from __future__ import annotations

MAGIC = 0x07230203
# Generator magic: tool id 0 ("unregistered") in the high 16 bits, our generator version low.
GENERATOR = 0x00000001


def version_word(major: int, minor: int) -> int:
    return (major << 16) | (minor << 8)


class Op:
    Nop = 0
    # GroupNonUniform (SPIR-V 1.3): subgroups
    GroupNonUniformAll = 334
    GroupNonUniformAny = 335
    GroupNonUniformBroadcastFirst = 338
    GroupNonUniformShuffle = 345
    GroupNonUniformShuffleXor = 346
    GroupNonUniformIAdd = 349
    GroupNonUniformFAdd = 350
    GroupNonUniformSMin = 353
    GroupNonUniformUMin = 354
    GroupNonUniformFMin = 355
    GroupNonUniformSMax = 356
    GroupNonUniformUMax = 357
    GroupNonUniformFMax = 358
    Name = 5
    MemberName = 6
    Extension = 10
    ExtInstImport = 11
    ExtInst = 12
    MemoryModel = 14
    EntryPoint = 15
    ExecutionMode = 16
    Capability = 17
    TypeVoid = 19
    TypeBool = 20
    TypeInt = 21
    TypeFloat = 22
    TypeVector = 23
    TypeArray = 28
    TypeRuntimeArray = 29
    TypeStruct = 30
    TypePointer = 32
    TypeFunction = 33
    ConstantTrue = 41
    ConstantFalse = 42
    Constant = 43
    ConstantComposite = 44
    ConstantNull = 46
    SpecConstant = 50
    SpecConstantComposite = 51
    Function = 54
    FunctionEnd = 56
    Variable = 59
    Load = 61
    Store = 62
    AccessChain = 65
    Decorate = 71
    MemberDecorate = 72
    CompositeConstruct = 80
    CompositeExtract = 81
    ConvertFToU = 109
    ConvertFToS = 110
    ConvertSToF = 111
    ConvertUToF = 112
    UConvert = 113
    SConvert = 114
    FConvert = 115
    Bitcast = 124
    SNegate = 126
    FNegate = 127
    IAdd = 128
    FAdd = 129
    ISub = 130
    FSub = 131
    IMul = 132
    FMul = 133
    UDiv = 134
    SDiv = 135
    FDiv = 136
    UMod = 137
    SRem = 138
    FRem = 140
    LogicalEqual = 164
    LogicalNotEqual = 165
    LogicalOr = 166
    LogicalAnd = 167
    LogicalNot = 168
    Select = 169
    IEqual = 170
    INotEqual = 171
    UGreaterThan = 172
    SGreaterThan = 173
    UGreaterThanEqual = 174
    SGreaterThanEqual = 175
    ULessThan = 176
    SLessThan = 177
    ULessThanEqual = 178
    SLessThanEqual = 179
    FOrdEqual = 180
    IsNan = 156
    IsInf = 157
    FUnordNotEqual = 183
    FOrdLessThan = 184
    FOrdGreaterThan = 186
    FOrdLessThanEqual = 188
    FOrdGreaterThanEqual = 190
    ShiftRightLogical = 194
    ShiftRightArithmetic = 195
    ShiftLeftLogical = 196
    BitwiseOr = 197
    BitwiseXor = 198
    BitwiseAnd = 199
    Not = 200
    ControlBarrier = 224
    AtomicLoad = 227
    AtomicExchange = 229
    AtomicCompareExchange = 230
    AtomicIAdd = 234
    AtomicSMin = 236
    AtomicUMin = 237
    AtomicSMax = 238
    AtomicUMax = 239
    Phi = 245
    LoopMerge = 246
    SelectionMerge = 247
    Label = 248
    Branch = 249
    BranchConditional = 250
    Return = 253
    Unreachable = 255
    # SPV_KHR_cooperative_matrix: matrix fragments (spirv_matrix.py)
    MatrixTimesScalar = 143
    TypeCooperativeMatrixKHR = 4456
    CooperativeMatrixLoadKHR = 4457
    CooperativeMatrixStoreKHR = 4458
    CooperativeMatrixMulAddKHR = 4459
    CooperativeMatrixLengthKHR = 4460


OP_NAMES = {v: "Op" + k for k, v in vars(Op).items() if not k.startswith("_")}


def _enum(**members):
    return dict(members)


CAPABILITY = _enum(Shader=1, Float16=9, Float64=10, Int64=11, Int64Atomics=12, Int16=22, Int8=39,
                   StorageBuffer16BitAccess=4433, StorageBuffer8BitAccess=4448,
                   SignedZeroInfNanPreserve=4466, GroupNonUniform=61, GroupNonUniformVote=62,
                   GroupNonUniformArithmetic=63, GroupNonUniformBallot=64, GroupNonUniformShuffle=65,
                   CooperativeMatrixKHR=6022, VulkanMemoryModel=5345, BFloat16TypeKHR=5116,
                   BFloat16CooperativeMatrixKHR=5118)
ADDRESSING = _enum(Logical=0)
#: FP Encoding operand of OpTypeFloat (SPV_KHR_bfloat16)
BFLOAT16_KHR = 0
MEMORY_MODEL = _enum(GLSL450=1, Vulkan=3)
EXECUTION_MODEL = _enum(GLCompute=5)
EXECUTION_MODE = _enum(LocalSize=17, SignedZeroInfNanPreserve=4461)
STORAGE_CLASS = _enum(Input=1, Workgroup=4, Function=7, PushConstant=9, StorageBuffer=12)
DECORATION = _enum(SpecId=1, Block=2, ArrayStride=6, BuiltIn=11, NonWritable=24, Binding=33,
                   DescriptorSet=34, Offset=35, NoContraction=42)
BUILTIN = _enum(NumWorkgroups=24, WorkgroupSize=25, WorkgroupId=26, LocalInvocationId=27,
                GlobalInvocationId=28, SubgroupSize=36, SubgroupId=40, SubgroupLocalInvocationId=41)

SCOPE_DEVICE = 1
SCOPE_WORKGROUP = 2
SCOPE_SUBGROUP = 3
GROUP_OPERATION_REDUCE = 0
SEM_RELAXED = 0x0
SEM_ACQUIRE_RELEASE = 0x8
SEM_UNIFORM_MEMORY = 0x40
SEM_WORKGROUP_MEMORY = 0x100
# Vulkan memory model only: a barrier's writes made available, and the others' made visible.
SEM_MAKE_AVAILABLE = 0x2000
SEM_MAKE_VISIBLE = 0x4000

# GLSL.std.450 extended instructions.
GLSL = _enum(FAbs=4, SAbs=5, Floor=8, Ceil=9, Sin=13, Cos=14, Tanh=21, Pow=26, Exp=27, Log=28,
             Exp2=29, Log2=30, Sqrt=31, InverseSqrt=32, UMin=38, SMin=39, UMax=41, SMax=42, Fma=50,
             NMin=79, NMax=80)
GLSL_NAMES = {v: k for k, v in GLSL.items()}

# Decorations followed by literal operands (count); others take none, BuiltIn takes an enumerant.
DECORATION_LITERALS = {"SpecId": 1, "ArrayStride": 1, "Binding": 1, "DescriptorSet": 1, "Offset": 1}

# Operand grammar per opcode, for the disassembler. Kinds:
#   T result type id, R result id, I id, I* remaining ids, L literal word, L* remaining literals,
#   S literal string, V literal of the result type (OpConstant/OpSpecConstant),
#   E:<table> one enumerant, D decoration with its operands, X execution mode with its literals,
#   G GLSL.std.450 instruction number.
GRAMMAR = {
    Op.Nop: [],
    Op.Name: ["I", "S"],
    Op.MemberName: ["I", "L", "S"],
    Op.Extension: ["S"],
    Op.ExtInstImport: ["R", "S"],
    Op.ExtInst: ["T", "R", "I", "G", "I*"],
    Op.MemoryModel: ["E:ADDRESSING", "E:MEMORY_MODEL"],
    Op.EntryPoint: ["E:EXECUTION_MODEL", "I", "S", "I*"],
    Op.ExecutionMode: ["I", "X"],
    Op.Capability: ["E:CAPABILITY"],
    Op.TypeVoid: ["R"],
    Op.TypeBool: ["R"],
    Op.TypeInt: ["R", "L", "L"],
    Op.TypeFloat: ["R", "L", "L*"],  # width, then the FP encoding (SPV_KHR_bfloat16: BFloat16KHR = 0)
    Op.TypeVector: ["R", "I", "L"],
    Op.TypeArray: ["R", "I", "I"],
    Op.TypeRuntimeArray: ["R", "I"],
    Op.TypeStruct: ["R", "I*"],
    Op.TypePointer: ["R", "E:STORAGE_CLASS", "I"],
    Op.TypeFunction: ["R", "I", "I*"],
    Op.ConstantTrue: ["T", "R"],
    Op.ConstantFalse: ["T", "R"],
    Op.Constant: ["T", "R", "V"],
    Op.ConstantComposite: ["T", "R", "I*"],
    Op.ConstantNull: ["T", "R"],
    Op.SpecConstant: ["T", "R", "V"],
    Op.SpecConstantComposite: ["T", "R", "I*"],
    Op.Function: ["T", "R", "E:FUNCTION_CONTROL", "I"],
    Op.FunctionEnd: [],
    Op.Variable: ["T", "R", "E:STORAGE_CLASS", "I*"],
    Op.Load: ["T", "R", "I"],
    Op.Store: ["I", "I"],
    Op.AccessChain: ["T", "R", "I", "I*"],
    Op.Decorate: ["I", "D"],
    Op.MemberDecorate: ["I", "L", "D"],
    Op.CompositeConstruct: ["T", "R", "I*"],
    Op.CompositeExtract: ["T", "R", "I", "L*"],
    Op.Phi: ["T", "R", "I*"],
    Op.LoopMerge: ["I", "I", "E:LOOP_CONTROL"],
    Op.SelectionMerge: ["I", "E:SELECTION_CONTROL"],
    Op.Label: ["R"],
    Op.Branch: ["I"],
    Op.BranchConditional: ["I", "I", "I"],
    Op.Return: [],
    Op.Unreachable: [],
    Op.ControlBarrier: ["I", "I", "I"],
}
for _op in (Op.ConvertFToU, Op.ConvertFToS, Op.ConvertSToF, Op.ConvertUToF, Op.UConvert, Op.SConvert,
            Op.FConvert, Op.Bitcast, Op.SNegate, Op.FNegate, Op.LogicalNot, Op.Not, Op.IsNan, Op.IsInf):
    GRAMMAR[_op] = ["T", "R", "I"]
for _op in (Op.IAdd, Op.FAdd, Op.ISub, Op.FSub, Op.IMul, Op.FMul, Op.UDiv, Op.SDiv, Op.FDiv, Op.UMod,
            Op.SRem, Op.FRem, Op.LogicalEqual, Op.LogicalNotEqual, Op.LogicalOr, Op.LogicalAnd,
            Op.IEqual, Op.INotEqual, Op.UGreaterThan, Op.SGreaterThan, Op.UGreaterThanEqual,
            Op.SGreaterThanEqual, Op.ULessThan, Op.SLessThan, Op.ULessThanEqual, Op.SLessThanEqual,
            Op.FOrdEqual, Op.FUnordNotEqual, Op.FOrdLessThan, Op.FOrdGreaterThan, Op.FOrdLessThanEqual,
            Op.FOrdGreaterThanEqual, Op.ShiftRightLogical, Op.ShiftRightArithmetic, Op.ShiftLeftLogical,
            Op.BitwiseOr, Op.BitwiseXor, Op.BitwiseAnd):
    GRAMMAR[_op] = ["T", "R", "I", "I"]
GRAMMAR[Op.Select] = ["T", "R", "I", "I", "I"]
GRAMMAR[Op.AtomicLoad] = ["T", "R", "I", "I", "I"]
for _op in (Op.AtomicExchange, Op.AtomicIAdd, Op.AtomicSMin, Op.AtomicUMin, Op.AtomicSMax, Op.AtomicUMax):
    GRAMMAR[_op] = ["T", "R", "I", "I", "I", "I"]
GRAMMAR[Op.AtomicCompareExchange] = ["T", "R", "I", "I", "I", "I", "I", "I"]
for _op in (Op.GroupNonUniformAll, Op.GroupNonUniformAny, Op.GroupNonUniformBroadcastFirst):
    GRAMMAR[_op] = ["T", "R", "I", "I"]
for _op in (Op.GroupNonUniformShuffle, Op.GroupNonUniformShuffleXor):
    GRAMMAR[_op] = ["T", "R", "I", "I", "I"]
for _op in range(Op.GroupNonUniformIAdd, Op.GroupNonUniformFMax + 1):
    GRAMMAR[_op] = ["T", "R", "I", "L", "I"]
GRAMMAR[Op.MatrixTimesScalar] = ["T", "R", "I", "I"]
GRAMMAR[Op.TypeCooperativeMatrixKHR] = ["R", "I", "I", "I", "I", "I"]  # component, scope, rows, cols, use
GRAMMAR[Op.CooperativeMatrixLoadKHR] = ["T", "R", "I", "I", "I"]  # pointer, layout, stride
GRAMMAR[Op.CooperativeMatrixStoreKHR] = ["I", "I", "I", "I"]  # pointer, object, layout, stride
GRAMMAR[Op.CooperativeMatrixMulAddKHR] = ["T", "R", "I", "I", "I", "L*"]  # a, b, c, operands
GRAMMAR[Op.CooperativeMatrixLengthKHR] = ["T", "R", "I"]  # the cooperative matrix type

ENUMS = {
    "CAPABILITY": CAPABILITY, "ADDRESSING": ADDRESSING, "MEMORY_MODEL": MEMORY_MODEL,
    "EXECUTION_MODEL": EXECUTION_MODEL, "EXECUTION_MODE": EXECUTION_MODE,
    "STORAGE_CLASS": STORAGE_CLASS, "DECORATION": DECORATION, "BUILTIN": BUILTIN,
    "SELECTION_CONTROL": {"None": 0}, "LOOP_CONTROL": {"None": 0}, "FUNCTION_CONTROL": {"None": 0},
}
ENUM_NAMES = {table: {v: k for k, v in members.items()} for table, members in ENUMS.items()}
