import torch
t = torch.zeros(4, device="cuda", dtype=torch.bfloat16)
try:
    print("CAI:", t.__cuda_array_interface__)
except Exception as e:
    print("CAI raises:", type(e).__name__, e)
print("dtype str:", str(t.dtype))
