/* The CPU runtimes' default safety in pk_kernel_launch (launch_proof.c). */
#ifndef PK_LAUNCH_PROOF_H
#define PK_LAUNCH_PROOF_H
#include "polykern.h"

/* 0 when every launch-time condition of the kernel's proven accesses holds (or it has none), else
 * PK_ERR_LAUNCH naming the access and the condition. `nuser`: the user's arguments at the front of args. */
int pk_launch_proof_check(const pk_function_info *fi, size_t nuser, void *const *args, const uint32_t grid[3],
                          const uint32_t block[3], pk_error *err);
/* 1 when a kernel with checked accesses is launched with its user's arguments only (nargs). */
int pk_bounds_hidden_args(const pk_function_info *fi, size_t nargs);
/* That launch: the hidden arguments added, a recorded violation reported as PK_ERR_LAUNCH. */
int pk_bounds_launch(pk_kernel *k, size_t nargs, void *const *args, const uint32_t grid[3],
                     const uint32_t block[3], pk_error *err);
/* The program a kernel belongs to (program.c). */
pk_program *pk_kernel_program(const pk_kernel *k);
#endif
