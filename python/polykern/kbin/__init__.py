"""The artifact format: the byte format of a .kbin (wire), its message table, the function schema and
FunctionInfo, payload formats and file I/O. Imports no runtime and no code generator."""
