	.attribute	4, 68
	.attribute	10, 1
	.file	"polykern"
	.text
	.globl	grid_3d__range
	.p2align	4
	.type	grid_3d__range,@function
grid_3d__range:
	{
		p0 = cmp.gt(r5:4,r3:2)
		memd(r29+#-16) = r17:16
		allocframe(#168)
	}
	{
		memd(r29+#152) = r19:18
		memd(r29+#144) = r21:20
	}
	{
		memd(r29+#136) = r23:22
		memd(r29+#128) = r25:24
	}
	{
		if (!p0) jump:nt .LBB0_9
		memd(r29+#120) = r27:26
		memd(r29+#104) = r5:4
	}
	{
		r7:6 = combine(r3,r2)
		r3:2 = combine(r1,r0)
		r23 = #0
		r22 = memw(r1+#0)
	}
	{
		r19 = #0
		r21:20 = combine(r7,r6)
		r26 = memw(r3+#16)
		r27 = memw(r3+#12)
	}
	{
		r18 = memw(r3+#20)
		r3 = memw(r2+#0)
	}
	{
		r4 = memw(r2+#4)
		r5 = memw(r2+#8)
	}
	{
		r9:8 = mpyu(r18,r26)
		r2 = memw(r3+#0)
		memw(r29+#40) = r2.new
	}
	{
		r1:0 = combine(r7,r6)
		r3:2 = combine(r23,r22)
		r24 = memw(r1+#4)
		r4 = memw(r4+#0)
	}
	{
		r4 = memw(r5+#0)
		memw(r29+#20) = r4
	}
	{
		call __hexagon_udivdi3
		r25 = r19
		memd(r29+#48) = r9:8
		memw(r29+#24) = r4
	}
	{
		call __hexagon_udivdi3
		r17:16 = combine(r1,r0)
		r3:2 = combine(r25,r24)
	}
	{
		r3:2 = mpyu(r16,r22)
		r13:12 = combine(r1,r0)
		r4 = add(r18,r24)
		memw(r29+#44) = r4.new
	}
	{
		r1:0 = mpyu(r12,r24)
		r3 += mpyi(r22,r17)
		r4 = r24
		r9:8 = combine(r21,r20)
	}
	{
		r1 += mpyi(r24,r13)
		r11:10 = sub(r21:20,r3:2)
		r3 = ##2147483640
	}
	{
		r4 = r22
		r24 = and(r27,#7)
		memw(r29+#36) = r18
		memd(r29+#64) = r5:4
	}
	{
		r15:14 = sub(r17:16,r1:0)
		r18 = and(r27,r3)
		r21:20 = combine(#0,#1)
		r23:22 = combine(#0,#8)
	}
	{
		p0 = cmp.gtu(r27,#7)
	}
	{
		r2 = p0
		memd(r29+#56) = r5:4
		memw(r29+#32) = r27
	}
	{
		jump .LBB0_2
		memw(r29+#28) = r2
	}
	.p2align	4
.LBB0_8:
	{
		r5:4 = memd(r29+#56)
		r11:10 = memd(r29+#96)
	}
	{
		r1:0 = add(r11:10,r21:20)
		r5 = r19
		r15:14 = memd(r29+#88)
		r9:8 = memd(r29+#64)
	}
	{
		p0 = cmp.eq(r1:0,r5:4)
		r3:2 = add(r15:14,r21:20)
		r9 = r19
		r6 = r4
	}
	{
		if (!p0) r2 = add(r14,#0)
		if (!p0) r3 = add(r15,#0)
		r4 = r8
		r13:12 = memd(r29+#80)
	}
	{
		p1 = cmp.eq(r3:2,r9:8)
		r17:16 = memd(r29+#72)
		memd(r29+#56) = r7:6
	}
	{
		r5:4 = add(r13:12,r21:20)
		r9:8 = add(r17:16,r21:20)
		r7:6 = memd(r29+#104)
		memd(r29+#64) = r5:4
	}
	{
		p2 = cmp.gt(r7:6,r9:8)
		r10 = mux(p0,r19,r0)
		r14 = mux(p1,r19,r2)
		if (p1) r12 = add(r4,#0)
	}
	{
		r11 = mux(p0,r19,r1)
		if (p1) r13 = add(r5,#0)
		r15 = mux(p1,r19,r3)
		if (!p2) jump:nt .LBB0_9
	}
.LBB0_2:
	{
		r1 = mpyi(r26,r14)
		r17:16 = combine(#0,#0)
		r0 = memw(r29+#32)
		r3 = memw(r29+#44)
	}
	{
		r4 = memw(r29+#36)
		memw(r29+#4) = r1
	}
	{
		r0 = mpyi(r0,r10)
		r2 = memw(r29+#40)
		memd(r29+#72) = r9:8
	}
	{
		r1 = mpyi(r4,r12)
		r0 = addasl(r2,r0,#2)
		memw(r29+#8) = r1.new
	}
	{
		r1 = add(r3,r12)
		memd(r29+#96) = r11:10
		memd(r29+#88) = r15:14
	}
	{
		memd(r29+#80) = r13:12
		memw(r29+#12) = r1
	}
	{
		jump .LBB0_3
		memw(r29+#16) = r0
	}
	.p2align	4
.LBB0_7:
	{
		r17:16 = add(r17:16,r21:20)
		r1:0 = memd(r29+#48)
	}
	{
		p0 = cmp.gtu(r1:0,r17:16)
		if (!p0.new) jump:nt .LBB0_8
	}
.LBB0_3:
	{
		r27 = r19
		r1:0 = combine(r17,r16)
	}
	{
		call __hexagon_udivdi3
		r3:2 = combine(r27,r26)
	}
	{
		r3:2 = mpyu(r0,r26)
		r4 = memw(r29+#8)
		r5 = memw(r29+#4)
	}
	{
		r3 += mpyi(r26,r1)
		r4 = add(r4,r0)
	}
	{
		r3:2 = sub(r17:16,r3:2)
	}
	{
		r1 = add(r5,r2)
		r3 = memw(r29+#24)
	}
	{
		r1 += mpyi(r4,r3)
		r4 = memw(r29+#20)
		r6 = memw(r29+#16)
	}
	{
		r3 = mpyi(r1,r4)
		r1:0 = combine(#0,#0)
		r4 = memw(r29+#12)
	}
	{
		r3 = addasl(r6,r3,#2)
		r2 = add(r4,r2)
		r5:4 = combine(#0,#0)
		r6 = memw(r29+#28)
	}
	{
		p0 = r6
		if (!p0.new) jump:t .LBB0_6
	}
	.p2align	4
.LBB0_4:
	{
		r6 = addasl(r3,r4,#2)
		r5:4 = add(r5:4,r23:22)
		memw(r3+r4<<#2) = r2
	}
	{
		p0 = cmp.eq(r5:4,r19:18)
	}
	{
		memw(r6+#4) = r2
		memw(r6+#8) = r2
	}
	{
		memw(r6+#12) = r2
		memw(r6+#16) = r2
	}
	{
		memw(r6+#20) = r2
		memw(r6+#24) = r2
	}
	{
		if (!p0) jump:nt .LBB0_4
		memw(r6+#28) = r2
	}
	{
		r25 = r19
		r7:6 = combine(#0,#0)
	}
	{
		p0 = cmp.eq(r25:24,r7:6)
		if (p0.new) jump:nt .LBB0_7
	}
	.p2align	5
.LBB0_6:
	{
		r1:0 = add(r1:0,r21:20)
		r5:4 = add(r5:4,r21:20)
		r25 = r19
		memw(r3+r4<<#2) = r2
	}
	{
		p0 = cmp.eq(r1:0,r25:24)
		if (!p0.new) jump:t .LBB0_6
	}
	{
		jump .LBB0_7
	}
.LBB0_9:
	{
		r17:16 = memd(r29+#160)
		r19:18 = memd(r29+#152)
	}
	{
		r21:20 = memd(r29+#144)
		r23:22 = memd(r29+#136)
	}
	{
		r25:24 = memd(r29+#128)
		r27:26 = memd(r29+#120)
	}
	{
		r31:30 = dealloc_return(r30):raw
	}
.Lfunc_end0:
	.size	grid_3d__range, .Lfunc_end0-grid_3d__range

	.section	".note.GNU-stack","",@progbits
