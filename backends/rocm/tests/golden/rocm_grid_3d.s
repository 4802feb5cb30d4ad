	.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
	.amdhsa_code_object_version 4
	.text
	.globl	grid_3d
	.p2align	8
	.type	grid_3d,@function
grid_3d:
	s_load_dwordx2 s[12:13], s[4:5], 0x4
	s_load_dword s11, s[4:5], 0x10
	s_load_dwordx4 s[0:3], s[6:7], 0x0
	v_bfe_u32 v2, v0, 10, 10
	s_waitcnt lgkmcnt(0)
	s_lshr_b32 s4, s12, 16
	v_cvt_f32_u32_e32 v1, s4
	s_and_b32 s6, s12, 0xffff
	s_add_i32 s7, s4, s11
	s_sub_i32 s11, 0, s4
	v_rcp_iflag_f32_e32 v1, v1
	s_add_i32 s7, s7, -1
	s_and_b32 s5, s13, 0xffff
	s_mul_i32 s9, s9, s4
	v_mul_f32_e32 v1, 0x4f7ffffe, v1
	v_cvt_u32_f32_e32 v1, v1
	s_mul_i32 s8, s8, s6
	v_mov_b32_e32 v3, s1
	v_readfirstlane_b32 s12, v1
	s_mul_i32 s11, s11, s12
	s_mul_hi_u32 s11, s12, s11
	s_add_i32 s12, s12, s11
	s_mul_hi_u32 s11, s7, s12
	s_mul_i32 s12, s11, s4
	s_sub_i32 s7, s7, s12
	s_add_i32 s13, s11, 1
	s_sub_i32 s12, s7, s4
	s_cmp_ge_u32 s7, s4
	s_cselect_b32 s11, s13, s11
	s_cselect_b32 s7, s12, s7
	s_add_i32 s12, s11, 1
	s_cmp_ge_u32 s7, s4
	s_mul_i32 s4, s10, s5
	v_bfe_u32 v1, v0, 20, 10
	v_add_u32_e32 v1, s4, v1
	v_mul_lo_u32 v1, v1, s3
	v_add3_u32 v1, s9, v2, v1
	v_mul_lo_u32 v1, v1, s2
	v_and_b32_e32 v0, 0x3ff, v0
	v_add3_u32 v0, s8, v0, v1
	v_ashrrev_i32_e32 v1, 31, v0
	s_cselect_b32 s7, s12, s11
	v_lshlrev_b64 v[0:1], 2, v[0:1]
	v_add_co_u32_e32 v0, vcc, s0, v0
	s_add_i32 s0, s7, s5
	s_add_i32 s0, s0, s10
	v_addc_co_u32_e32 v1, vcc, v3, v1, vcc
	v_add_u32_e32 v2, s0, v2
	global_store_dword v[0:1], v2, off
	s_endpgm
	.section	.rodata,"a",@progbits
	.p2align	6, 0x0
	.amdhsa_kernel grid_3d
		.amdhsa_group_segment_fixed_size 0
		.amdhsa_private_segment_fixed_size 0
		.amdhsa_kernarg_size 16
		.amdhsa_user_sgpr_count 8
		.amdhsa_user_sgpr_private_segment_buffer 1
		.amdhsa_user_sgpr_dispatch_ptr 1
		.amdhsa_user_sgpr_queue_ptr 0
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_user_sgpr_dispatch_id 0
		.amdhsa_user_sgpr_flat_scratch_init 0
		.amdhsa_user_sgpr_kernarg_preload_length 0
		.amdhsa_user_sgpr_kernarg_preload_offset 0
		.amdhsa_user_sgpr_private_segment_size 0
		.amdhsa_system_sgpr_private_segment_wavefront_offset 0
		.amdhsa_system_sgpr_workgroup_id_x 1
		.amdhsa_system_sgpr_workgroup_id_y 1
		.amdhsa_system_sgpr_workgroup_id_z 1
		.amdhsa_system_sgpr_workgroup_info 0
		.amdhsa_system_vgpr_workitem_id 2
		.amdhsa_next_free_vgpr 4
		.amdhsa_next_free_sgpr 14
		.amdhsa_accum_offset 4
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
		.amdhsa_reserve_xnack_mask 1
		.amdhsa_float_round_mode_32 0
		.amdhsa_float_round_mode_16_64 0
		.amdhsa_float_denorm_mode_32 3
		.amdhsa_float_denorm_mode_16_64 3
		.amdhsa_dx10_clamp 1
		.amdhsa_ieee_mode 1
		.amdhsa_fp16_overflow 0
		.amdhsa_tg_split 0
		.amdhsa_exception_fp_ieee_invalid_op 0
		.amdhsa_exception_fp_denorm_src 0
		.amdhsa_exception_fp_ieee_div_zero 0
		.amdhsa_exception_fp_ieee_overflow 0
		.amdhsa_exception_fp_ieee_underflow 0
		.amdhsa_exception_fp_ieee_inexact 0
		.amdhsa_exception_int_div_zero 0
	.end_amdhsa_kernel
	.text
.Lfunc_end0:
	.size	grid_3d, .Lfunc_end0-grid_3d

	.set grid_3d.num_vgpr, 4
	.set grid_3d.num_agpr, 0
	.set grid_3d.numbered_sgpr, 14
	.set grid_3d.num_named_barrier, 0
	.set grid_3d.private_seg_size, 0
	.set grid_3d.uses_vcc, 1
	.set grid_3d.uses_flat_scratch, 0
	.set grid_3d.has_dyn_sized_stack, 0
	.set grid_3d.has_recursion, 0
	.set grid_3d.has_indirect_call, 0
	.p2alignl 6, 3212836864
	.fill 256, 4, 3212836864
	.section	.AMDGPU.gpr_maximums,"",@progbits
	.set amdgpu.max_num_vgpr, 0
	.set amdgpu.max_num_agpr, 0
	.set amdgpu.max_num_sgpr, 0
	.set amdgpu.max_num_named_barrier, 0
	.text
	.section	".note.GNU-stack","",@progbits
	.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     0
    .args:
      - .address_space:  global
        .name:           out
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
      - .name:           w
        .offset:         8
        .size:           4
        .value_kind:     by_value
      - .name:           h
        .offset:         12
        .size:           4
        .value_kind:     by_value
    .group_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .kernarg_segment_size: 16
    .max_flat_workgroup_size: 1024
    .name:           grid_3d
    .private_segment_fixed_size: 0
    .sgpr_count:     18
    .sgpr_spill_count: 0
    .symbol:         grid_3d.kd
    .vgpr_count:     4
    .vgpr_spill_count: 0
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--gfx90a
amdhsa.version:
  - 1
  - 1
...

	.end_amdgpu_metadata
