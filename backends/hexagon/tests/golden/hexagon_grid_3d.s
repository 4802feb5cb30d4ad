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
		allocframe(#152)
	}
	{
		memd(r29+#136) = r19:18
		memd(r29+#128) = r21:20
	}
	{
		memd(r29+#120) = r23:22
		memd(r29+#112) = r25:24
	}
	{
		if (!p0) jump:nt .LBB0_9
		memd(r29+#104) = r27:26
		memd(r29+#72) = r5:4
	}
	{
		r7:6 = combine(r3,r2)
		r4 = ##2147483640
		r2 = memw(r0+#0)
	}
	{
		r17 = #0
		r12 = memw(r1+#20)
		r5 = memw(r1+#12)
	}
	{
		r21:20 = combine(#0,#1)
		r25:24 = combine(#0,#8)
		r3 = memw(r0+#4)
		r8 = memw(r1+#4)
	}
	{
		r22 = and(r5,#7)
		r2 = memw(r2+#0)
		r18 = memw(r1+#16)
	}
	{
		r2 = add(r12,r8)
		r16 = and(r5,r4)
		r0 = memw(r0+#8)
		memw(r29+#32) = r2
	}
	{
		r9 = #0
		p0 = cmp.gtu(r5,#7)
		r2 = memw(r3+#0)
		memw(r29+#36) = r2
	}
	{
		r3:2 = mpyu(r12,r18)
		r15 = #0
		r14 = memw(r1+#0)
		memw(r29+#16) = r2
	}
	{
		r1 = p0
		r0 = memw(r0+#0)
		memw(r29+#12) = r1.new
	}
	{
		memw(r29+#24) = r5
		memd(r29+#88) = r15:14
	}
	{
		memd(r29+#80) = r9:8
		memw(r29+#20) = r0
	}
	{
		jump .LBB0_2
		memw(r29+#28) = r12
		memd(r29+#56) = r3:2
	}
	.p2align	4
.LBB0_8:
	{
		r7:6 = memd(r29+#64)
		r1:0 = memd(r29+#72)
	}
	{
		r7:6 = add(r7:6,r21:20)
	}
	{
		p0 = cmp.gt(r1:0,r7:6)
		if (!p0.new) jump:nt .LBB0_9
	}
.LBB0_2:
	{
		r1:0 = combine(r7,r6)
		r27:26 = memd(r29+#88)
		memd(r29+#64) = r7:6
	}
	{
		call __hexagon_udivdi3
		r3:2 = combine(r27,r26)
	}
	{
		r5:4 = mpyu(r0,r26)
		r7:6 = memd(r29+#64)
		memd(r29+#48) = r1:0
	}
	{
		r5 += mpyi(r26,r1)
		r27:26 = memd(r29+#80)
	}
	{
		r5:4 = sub(r7:6,r5:4)
		r3:2 = combine(r27,r26)
	}
	{
		call __hexagon_udivdi3
		memd(r29+#40) = r5:4
	}
	{
		r3:2 = mpyu(r0,r26)
		r4 = memw(r29+#24)
		r7:6 = memd(r29+#40)
	}
	{
		r3 += mpyi(r26,r1)
		r27:26 = combine(#0,#0)
		r7 = memw(r29+#28)
	}
	{
		r4 = mpyi(r4,r6)
	}
	{
		r1 = mpyi(r7,r0)
		r7:6 = memd(r29+#48)
		memw(r29+#40) = r1.new
	}
	{
		r3:2 = sub(r7:6,r3:2)
		r6 = memw(r29+#36)
	}
	{
		r2 = mpyi(r18,r2)
		r5 = add(r6,r0)
		r3 = memw(r29+#32)
		memw(r29+#48) = r5.new
	}
	{
		r0 = addasl(r3,r4,#2)
		memw(r29+#4) = r0.new
	}
	{
		jump .LBB0_3
		memw(r29+#8) = r2
	}
	.p2align	4
.LBB0_7:
	{
		r27:26 = add(r27:26,r21:20)
		r1:0 = memd(r29+#56)
	}
	{
		p0 = cmp.gtu(r1:0,r27:26)
		if (!p0.new) jump:nt .LBB0_8
	}
.LBB0_3:
	{
		r19 = r17
		r1:0 = combine(r27,r26)
	}
	{
		call __hexagon_udivdi3
		r3:2 = combine(r19,r18)
	}
	{
		r3:2 = mpyu(r0,r18)
		r4 = memw(r29+#40)
	}
	{
		r3 += mpyi(r18,r1)
		r5 = add(r4,r0)
		r4 = memw(r29+#8)
	}
	{
		r3:2 = sub(r27:26,r3:2)
	}
	{
		r1 = add(r4,r2)
		r3 = memw(r29+#20)
		r7 = memw(r29+#16)
	}
	{
		r1 += mpyi(r5,r3)
		r5:4 = combine(#0,#0)
		r6 = memw(r29+#48)
	}
	{
		r2 = add(r6,r2)
		r6 = memw(r29+#4)
	}
	{
		r3 = mpyi(r1,r7)
		r1:0 = combine(#0,#0)
	}
	{
		r3 = addasl(r6,r3,#2)
		r6 = memw(r29+#12)
	}
	{
		p0 = r6
		if (!p0.new) jump:t .LBB0_6
	}
	.p2align	4
.LBB0_4:
	{
		r6 = addasl(r3,r4,#2)
		r5:4 = add(r5:4,r25:24)
		memw(r3+r4<<#2) = r2
	}
	{
		p0 = cmp.eq(r5:4,r17:16)
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
		r23 = r17
		r7:6 = combine(#0,#0)
	}
	{
		p0 = cmp.eq(r23:22,r7:6)
		if (p0.new) jump:nt .LBB0_7
	}
	.p2align	5
.LBB0_6:
	{
		r1:0 = add(r1:0,r21:20)
		r5:4 = add(r5:4,r21:20)
		r23 = r17
		memw(r3+r4<<#2) = r2
	}
	{
		p0 = cmp.eq(r1:0,r23:22)
		if (!p0.new) jump:t .LBB0_6
	}
	{
		jump .LBB0_7
	}
.LBB0_9:
	{
		r17:16 = memd(r29+#144)
		r19:18 = memd(r29+#136)
	}
	{
		r21:20 = memd(r29+#128)
		r23:22 = memd(r29+#120)
	}
	{
		r25:24 = memd(r29+#112)
		r27:26 = memd(r29+#104)
	}
	{
		r31:30 = dealloc_return(r30):raw
	}
.Lfunc_end0:
	.size	grid_3d__range, .Lfunc_end0-grid_3d__range

	.section	".note.GNU-stack","",@progbits
