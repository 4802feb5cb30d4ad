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
		if (!p0) jump:nt .LBB0_14
		memd(r29+#72) = r27:26
		memd(r29+#64) = r5:4
	}
	{
		r17:16 = combine(r3,r2)
		r3:2 = combine(r1,r0)
		r23 = #0
		r19 = memw(r1+#12)
	}
	{
		r13:12 = combine(#0,r19)
		r5 = memw(r2+#0)
		r4 = memw(r3+#16)
	}
	{
		r8 = memw(r2+#8)
		memd(r29+#8) = r13:12
	}
	{
		r6 = memw(r2+#4)
		r7 = memw(r3+#20)
	}
	{
		r1:0 = combine(r17,r16)
		r22 = memw(r1+#0)
		r9 = memw(r2+#12)
	}
	{
		r7:6 = mpyu(r7,r4)
		r3:2 = combine(r23,r22)
		r24 = memw(r6+#0)
		r26 = memw(r5+#0)
	}
	{
		r25 = memw(r8+#0)
		memd(r29+#40) = r7:6
	}
	{
		call __hexagon_umoddi3
		r18 = memw(r9+#0)
	}
	{
		r11 = r19
		r13:12 = combine(#0,#1)
		r2 = add(r19,#-1)
		memw(r29+#4) = r2.new
	}
	{
		jump .LBB0_2
		memw(r29+#0) = r19
	}
	.p2align	4
.LBB0_13:
	{
		r1:0 = memd(r29+#56)
		r17:16 = memd(r29+#48)
	}
	{
		r5:4 = add(r1:0,r13:12)
		r17:16 = add(r17:16,r13:12)
		r3:2 = memd(r29+#64)
	}
	{
		p0 = cmp.eq(r5:4,r23:22)
		p1 = cmp.gt(r3:2,r17:16)
	}
	{
		r0 = mux(p0,r23,r4)
		r1 = mux(p0,r23,r5)
		if (!p1) jump:nt .LBB0_14
	}
.LBB0_2:
	{
		r3 = mpyi(r11,r0)
		r8 = r11
		r4 = memw(r29+#4)
		memd(r29+#56) = r1:0
	}
	{
		r0 = add(r4,r3)
		p0 = cmp.gt(r26,r3)
		r5:4 = combine(#0,#0)
		memd(r29+#48) = r17:16
	}
	{
		p1 = cmp.gt(r26,r0)
		r1:0 = memd(r29+#8)
	}
	{
		p1 = not(p1)
		r15:14 = combine(r1,r0)
	}
	{
		p1 = xor(p0,p1)
		if (p1.new) jump:t .LBB0_3
	}
	.p2align	4
.LBB0_16:
	{
		r7:6 = add(r1:0,r5:4)
	}
	{
		r10 = lsr(r6,#1)
		r11 = lsr(r7,#1)
	}
	{
		r10 = insert(r7,#1,#31)
	}
	{
		r7:6 = add(r11:10,r13:12)
		r2 = add(r3,r10)
	}
	{
		p1 = cmp.gt(r26,r2)
	}
	{
		p1 = xor(p0,p1)
		if (p1.new) r0 = add(r10,#0)
		if (p1.new) r1 = add(r11,#0)
	}
	{
		r14 = mux(p1,r4,r6)
		r15 = mux(p1,r5,r7)
	}
	{
		p1 = cmp.gtu(r1:0,r15:14)
		r5:4 = combine(r15,r14)
		if (p1.new) jump:t .LBB0_16
	}
.LBB0_3:
	{
		r28 = add(r3,#1)
		r19 = add(r3,#2)
		r2 = add(r3,#3)
		r16 = add(r3,#4)
	}
	{
		r17 = add(r3,#5)
		r4 = add(r3,#6)
		r5 = add(r3,#7)
		r7:6 = combine(#0,#0)
	}
	{
		r11 = r8
		r1:0 = memd(r29+#8)
		memd(r29+#16) = r15:14
	}
	{
		r1:0 = minu(r15:14,r1:0)
	}
	{
		jump .LBB0_4
		memd(r29+#24) = r1:0
	}
	.p2align	4
.LBB0_12:
	{
		r7:6 = memd(r29+#32)
		r1:0 = memd(r29+#40)
	}
	{
		r7:6 = add(r7:6,r13:12)
	}
	{
		p0 = cmp.gtu(r1:0,r7:6)
		if (!p0.new) jump:nt .LBB0_13
	}
.LBB0_4:
	{
		jump .LBB0_5
		r7:6 = combine(#0,#0)
		memd(r29+#32) = r7:6
	}
	.p2align	4
.LBB0_11:
	{
		r1:0 = memd(r29+#8)
		r15:14 = memd(r29+#16)
	}
	{
		p0 = cmp.gtu(r1:0,r7:6)
		if (!p0.new) jump:nt .LBB0_12
	}
.LBB0_5:
	{
		p0 = cmp.gtu(r15:14,r7:6)
		r21:20 = combine(r7,r6)
		r9:8 = memd(r29+#24)
	}
	{
		r6 = mux(p0,r8,r11)
		r7 = mux(p0,r9,r23)
		r0 = add(r3,r20)
		if (!cmp.gt(r26,r0.new)) jump:nt .LBB0_11
	}
	{
		p0 = cmp.gtu(r7:6,r21:20)
		if (!p0.new) jump:nt .LBB0_11
	}
	{
		r1:0 = sub(r7:6,r21:20)
		r15:14 = combine(#0,#7)
		r11 = r26
		r9:8 = combine(r23,r22)
	}
	{
		r27:26 = and(r1:0,r15:14)
		r23:22 = combine(#0,#0)
		r1:0 = combine(r21,r20)
	}
	{
		p0 = cmp.eq(r27:26,r23:22)
		if (p0.new) jump:nt .LBB0_10
	}
	{
		r1:0 = combine(r21,r20)
	}
	.p2align	4
.LBB0_9:
	{
		r23:22 = add(r23:22,r13:12)
		r1:0 = add(r1:0,r13:12)
		r14 = add(r3,r0)
	}
	{
		p0 = cmp.eq(r23:22,r27:26)
		r15 = memw(r25+r14<<#2)
		r10 = memw(r18+r14<<#2)
	}
	{
		r15 = sfmpy(r24,r15)
	}
	{
		r15 = sfadd(r15,r10)
		if (!p0) jump:nt .LBB0_9
		memw(r18+r14<<#2) = r15.new
	}
.LBB0_10:
	{
		r15:14 = sub(r21:20,r7:6)
		r23:22 = combine(#-1,#-8)
		r26 = r11
		r11 = memw(r29+#0)
	}
	{
		p0 = cmp.gtu(r15:14,r23:22)
		r23:22 = combine(r9,r8)
		r9:8 = combine(#0,#8)
		if (p0.new) jump:t .LBB0_11
	}
	.p2align	4
.LBB0_15:
	{
		r14 = add(r3,r0)
		r21 = add(r0,r28)
		r20 = add(r0,r19)
	}
	{
		r15 = memw(r25+r14<<#2)
		r10 = memw(r18+r14<<#2)
	}
	{
		r15 = sfmpy(r24,r15)
	}
	{
		r15 = sfadd(r15,r10)
		memw(r18+r14<<#2) = r15.new
	}
	{
		r15 = memw(r25+r21<<#2)
		r10 = memw(r18+r21<<#2)
	}
	{
		r15 = sfmpy(r24,r15)
	}
	{
		r15 = sfadd(r15,r10)
		r21 = add(r0,r2)
		memw(r18+r21<<#2) = r15.new
	}
	{
		r15 = memw(r25+r20<<#2)
		r10 = memw(r18+r20<<#2)
	}
	{
		r15 = sfmpy(r24,r15)
	}
	{
		r15 = sfadd(r15,r10)
		r20 = add(r0,r16)
		memw(r18+r20<<#2) = r15.new
	}
	{
		r15 = memw(r25+r21<<#2)
		r10 = memw(r18+r21<<#2)
	}
	{
		r15 = sfmpy(r24,r15)
	}
	{
		r15 = sfadd(r15,r10)
		r21 = add(r0,r17)
		memw(r18+r21<<#2) = r15.new
	}
	{
		r15 = memw(r25+r20<<#2)
		r10 = memw(r18+r20<<#2)
	}
	{
		r15 = sfmpy(r24,r15)
	}
	{
		r15 = sfadd(r15,r10)
		r20 = add(r0,r4)
		memw(r18+r20<<#2) = r15.new
	}
	{
		r15 = memw(r25+r21<<#2)
		r10 = memw(r18+r21<<#2)
	}
	{
		r15 = sfmpy(r24,r15)
	}
	{
		r15 = sfadd(r15,r10)
		r1:0 = add(r1:0,r9:8)
		r21 = add(r0,r5)
		memw(r18+r21<<#2) = r15.new
	}
	{
		p0 = cmp.gtu(r7:6,r1:0)
		r15 = memw(r25+r20<<#2)
		r10 = memw(r18+r20<<#2)
	}
	{
		r15 = sfmpy(r24,r15)
	}
	{
		r15 = sfadd(r15,r10)
		memw(r18+r20<<#2) = r15.new
	}
	{
		r15 = memw(r25+r21<<#2)
		r10 = memw(r18+r21<<#2)
	}
	{
		r15 = sfmpy(r24,r15)
	}
	{
		r15 = sfadd(r15,r10)
		if (p0) jump:nt .LBB0_15
		memw(r18+r21<<#2) = r15.new
	}
	{
		jump .LBB0_11
	}
.LBB0_14:
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
