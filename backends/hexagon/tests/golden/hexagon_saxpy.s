	.attribute	4, 68
	.attribute	10, 1
	.file	"polykern"
	.text
	.globl	saxpy__range
	.p2align	4
	.type	saxpy__range,@function
saxpy__range:
	{
		p0 = cmp.gt(r5:4,r3:2)
		memd(r29+#-16) = r17:16
		allocframe(#120)
	}
	{
		memd(r29+#104) = r19:18
		memd(r29+#96) = r21:20
	}
	{
		memd(r29+#88) = r23:22
		memd(r29+#80) = r25:24
	}
	{
		if (!p0) jump:nt .LBB0_15
		memd(r29+#72) = r27:26
		memd(r29+#64) = r5:4
	}
	{
		r7:6 = combine(r3,r2)
		r23:22 = combine(#0,#1)
		r4 = memw(r1+#16)
		r2 = memw(r0+#0)
	}
	{
		r19 = #0
		r17:16 = combine(#0,#8)
		r27 = memw(r1+#12)
		r18 = memw(r1+#0)
	}
	{
		r9:8 = combine(#0,r27)
		r5 = memw(r1+#20)
		r1 = memw(r0+#8)
	}
	{
		r3 = memw(r0+#4)
		memd(r29+#16) = r9:8
	}
	{
		r0 = memw(r0+#12)
		memd(r29+#32) = r19:18
	}
	{
		r24 = memw(r3+#0)
		memw(r29+#4) = r27
	}
	{
		r25 = memw(r1+#0)
		r26 = memw(r0+#0)
	}
	{
		r3:2 = mpyu(r5,r4)
		r28 = memw(r2+#0)
		memw(r29+#0) = r28.new
	}
	{
		jump .LBB0_2
		memd(r29+#48) = r3:2
	}
	.p2align	4
.LBB0_14:
	{
		r7:6 = memd(r29+#56)
		r1:0 = memd(r29+#64)
	}
	{
		r7:6 = add(r7:6,r23:22)
	}
	{
		p0 = cmp.gt(r1:0,r7:6)
		if (!p0.new) jump:nt .LBB0_15
	}
.LBB0_2:
	{
		call __hexagon_umoddi3
		r1:0 = combine(r7,r6)
		r3:2 = combine(r19,r18)
		memd(r29+#56) = r7:6
	}
	{
		r0 = mpyi(r27,r0)
		r15:14 = combine(#0,#0)
		r28 = memw(r29+#0)
		r5:4 = memd(r29+#16)
	}
	{
		p0 = cmp.gt(r28,r0)
	}
	.p2align	4
.LBB0_3:
	{
		r3:2 = add(r5:4,r15:14)
	}
	{
		r6 = lsr(r2,#1)
		r7 = lsr(r3,#1)
	}
	{
		r6 = insert(r3,#1,#31)
	}
	{
		r3:2 = add(r7:6,r23:22)
		r1 = add(r0,r6)
	}
	{
		p1 = cmp.gt(r28,r1)
	}
	{
		p1 = xor(p0,p1)
		if (p1.new) r4 = add(r6,#0)
		if (!p1.new) r14 = add(r2,#0)
		if (!p1.new) r15 = add(r3,#0)
	}
	{
		if (p1) r5 = add(r7,#0)
	}
	{
		p1 = cmp.gtu(r5:4,r15:14)
		if (p1.new) jump:t .LBB0_3
	}
	{
		r1 = add(r0,#1)
		r6 = add(r0,#2)
		r7 = add(r0,#3)
		r8 = add(r0,#4)
	}
	{
		r9 = add(r0,#5)
		r12 = add(r0,#6)
		r13 = add(r0,#7)
		r5:4 = combine(#0,#0)
	}
	{
		r3:2 = memd(r29+#16)
	}
	{
		r3:2 = minu(r15:14,r3:2)
	}
	{
		jump .LBB0_5
		memd(r29+#24) = r3:2
	}
	.p2align	4
.LBB0_13:
	{
		r5:4 = memd(r29+#40)
		r3:2 = memd(r29+#48)
	}
	{
		r5:4 = add(r5:4,r23:22)
	}
	{
		p0 = cmp.gtu(r3:2,r5:4)
		if (!p0.new) jump:nt .LBB0_14
	}
.LBB0_5:
	{
		r11:10 = combine(#0,#0)
		jump .LBB0_6
		memd(r29+#40) = r5:4
		memd(r29+#8) = r15:14
	}
	.p2align	4
.LBB0_12:
	{
		r3:2 = memd(r29+#16)
		r15:14 = memd(r29+#8)
	}
	{
		p0 = cmp.gtu(r3:2,r11:10)
		if (!p0.new) jump:nt .LBB0_13
	}
.LBB0_6:
	{
		p0 = cmp.gtu(r15:14,r11:10)
		r21:20 = combine(r11,r10)
		r5:4 = memd(r29+#24)
	}
	{
		r10 = mux(p0,r4,r27)
		r11 = mux(p0,r5,r19)
		r2 = add(r0,r20)
		if (!cmp.gt(r28,r2.new)) jump:nt .LBB0_12
	}
	{
		p0 = cmp.gtu(r11:10,r21:20)
		if (!p0.new) jump:nt .LBB0_12
	}
	{
		r3:2 = sub(r11:10,r21:20)
		r5:4 = combine(#0,#7)
		r19:18 = combine(#0,#0)
		r15:14 = combine(r21,r20)
	}
	{
		r3:2 = and(r3:2,r5:4)
	}
	{
		p0 = cmp.eq(r3:2,r19:18)
		if (p0.new) jump:nt .LBB0_11
	}
	{
		r15:14 = combine(r21,r20)
	}
	.p2align	4
.LBB0_10:
	{
		r19:18 = add(r19:18,r23:22)
		r15:14 = add(r15:14,r23:22)
		r28 = add(r0,r14)
	}
	{
		p0 = cmp.eq(r19:18,r3:2)
		r27 = memw(r25+r28<<#2)
		r4 = memw(r26+r28<<#2)
	}
	{
		r5 = sfmpy(r24,r27)
	}
	{
		r4 = sfadd(r5,r4)
		if (!p0) jump:nt .LBB0_10
		memw(r26+r28<<#2) = r4.new
	}
.LBB0_11:
	{
		r3:2 = sub(r21:20,r11:10)
		r5:4 = combine(#-1,#-8)
		r19:18 = memd(r29+#32)
		r27 = memw(r29+#4)
	}
	{
		p0 = cmp.gtu(r3:2,r5:4)
		if (p0.new) jump:t .LBB0_12
		r28 = memw(r29+#0)
	}
	.p2align	4
.LBB0_16:
	{
		r2 = add(r0,r14)
	}
	{
		r3 = memw(r25+r2<<#2)
		r4 = memw(r26+r2<<#2)
	}
	{
		r3 = sfmpy(r24,r3)
	}
	{
		r3 = sfadd(r3,r4)
		r2 = add(r14,r1)
		memw(r26+r2<<#2) = r3.new
	}
	{
		r3 = memw(r25+r2<<#2)
		r4 = memw(r26+r2<<#2)
	}
	{
		r3 = sfmpy(r24,r3)
	}
	{
		r3 = sfadd(r3,r4)
		r2 = add(r14,r6)
		memw(r26+r2<<#2) = r3.new
	}
	{
		r3 = memw(r25+r2<<#2)
		r4 = memw(r26+r2<<#2)
	}
	{
		r3 = sfmpy(r24,r3)
	}
	{
		r3 = sfadd(r3,r4)
		r2 = add(r14,r7)
		memw(r26+r2<<#2) = r3.new
	}
	{
		r3 = memw(r25+r2<<#2)
		r4 = memw(r26+r2<<#2)
	}
	{
		r3 = sfmpy(r24,r3)
	}
	{
		r3 = sfadd(r3,r4)
		r2 = add(r14,r8)
		memw(r26+r2<<#2) = r3.new
	}
	{
		r3 = memw(r25+r2<<#2)
		r4 = memw(r26+r2<<#2)
	}
	{
		r3 = sfmpy(r24,r3)
	}
	{
		r3 = sfadd(r3,r4)
		r2 = add(r14,r9)
		memw(r26+r2<<#2) = r3.new
	}
	{
		r3 = memw(r25+r2<<#2)
		r4 = memw(r26+r2<<#2)
	}
	{
		r3 = sfmpy(r24,r3)
	}
	{
		r3 = sfadd(r3,r4)
		r2 = add(r14,r12)
		memw(r26+r2<<#2) = r3.new
	}
	{
		r3 = memw(r25+r2<<#2)
		r4 = memw(r26+r2<<#2)
	}
	{
		r3 = sfmpy(r24,r3)
	}
	{
		r3 = sfadd(r3,r4)
		r15:14 = add(r15:14,r17:16)
		r2 = add(r14,r13)
		memw(r26+r2<<#2) = r3.new
	}
	{
		p0 = cmp.gtu(r11:10,r15:14)
		r3 = memw(r25+r2<<#2)
		r4 = memw(r26+r2<<#2)
	}
	{
		r3 = sfmpy(r24,r3)
	}
	{
		r3 = sfadd(r3,r4)
		if (p0) jump:nt .LBB0_16
		memw(r26+r2<<#2) = r3.new
	}
	{
		jump .LBB0_12
	}
.LBB0_15:
	{
		r17:16 = memd(r29+#112)
		r19:18 = memd(r29+#104)
	}
	{
		r21:20 = memd(r29+#96)
		r23:22 = memd(r29+#88)
	}
	{
		r25:24 = memd(r29+#80)
		r27:26 = memd(r29+#72)
	}
	{
		r31:30 = dealloc_return(r30):raw
	}
.Lfunc_end0:
	.size	saxpy__range, .Lfunc_end0-saxpy__range

	.section	".note.GNU-stack","",@progbits
