	.attribute	4, 68
	.attribute	10, 1
	.file	"polykern"
	.text
	.globl	shared_reduce__range
	.p2align	4
	.type	shared_reduce__range,@function
shared_reduce__range:
	{
		p0 = cmp.gt(r5:4,r3:2)
		allocframe(r29,#1216):raw
	}
	{
		r29 = and(r29,#-64)
		memd(r30+#-8) = r17:16
		memd(r30+#-16) = r19:18
	}
	{
		memd(r30+#-24) = r21:20
		memd(r30+#-32) = r23:22
	}
	{
		memd(r30+#-40) = r25:24
		memd(r30+#-48) = r27:26
	}
	{
		if (!p0) jump:nt .LBB0_60
		memd(r29+#112) = r5:4
	}
	{
		r9:8 = combine(r3,r2)
		r27 = #0
		r2 = memw(r1+#16)
		r26 = memw(r1+#12)
	}
	{
		r17:16 = combine(#0,#8)
		r24 = add(r29,#128)
		r3 = memw(r1+#20)
		r4 = memw(r0+#0)
	}
	{
		r21:20 = combine(#0,#0)
		r23:22 = combine(#0,#7)
		r19:18 = combine(#0,#1)
		r5 = memw(r0+#4)
	}
	{
		r3:2 = mpyu(r3,r2)
		r13:12 = combine(#0,#7)
		r6 = #-8
	}
	{
		r13:12 = and(r3:2,r13:12)
		r7 = ##1073741823
	}
	{
		r11:10 = and(r3:2,r7:6)
		p0 = cmp.gtu(r17:16,r3:2)
		r15 = #0
		r14 = memw(r1+#0)
	}
	{
		r28 = asl(r26,#2)
		r4 = memw(r4+#0)
		memd(r29+#64) = r3:2
	}
	{
		r2 = p0
		r0 = memw(r5+#0)
		memd(r29+#72) = r13:12
	}
	{
		memd(r29+#120) = r15:14
		memw(r29+#56) = r4
	}
	{
		memw(r29+#60) = r0
		memw(r29+#52) = r2
	}
	{
		jump .LBB0_2
		memw(r29+#48) = r28
		memd(r29+#88) = r11:10
	}
	.p2align	4
.LBB0_59:
	{
		r9:8 = memd(r29+#96)
		r1:0 = memd(r29+#112)
	}
	{
		r9:8 = add(r9:8,r19:18)
	}
	{
		p0 = cmp.gt(r1:0,r9:8)
		if (!p0.new) jump:nt .LBB0_60
	}
.LBB0_2:
	{
		call __hexagon_umoddi3
		r1:0 = combine(r9,r8)
		r3:2 = memd(r29+#120)
		memd(r29+#96) = r9:8
	}
	{
		r5 = mpyi(r26,r0)
		r2 = r0
		r4 = memw(r29+#52)
		r1 = memw(r29+#56)
	}
	{
		r25 = addasl(r1,r5,#2)
		p0 = r4
		r3:2 = combine(#0,#0)
		memd(r29+#104) = r3:2
	}
	{
		if (p0) jump:nt .LBB0_6
		memw(r29+#44) = r25
	}
	.p2align	4
.LBB0_3:
	{
		r1 = r25
		r0 = add(r29,#128)
		r25 = memw(r29+#48)
		memd(r29+#80) = r3:2
	}
	{
		call memcpy
		r2 = r25
	}
	{
		call memcpy
		r2 = r25
		r0 = add(r29,#128)
		r1 = memw(r29+#44)
	}
	{
		call memcpy
		r2 = r25
		r0 = add(r29,#128)
		r1 = memw(r29+#44)
	}
	{
		call memcpy
		r2 = r25
		r0 = add(r29,#128)
		r1 = memw(r29+#44)
	}
	{
		call memcpy
		r2 = r25
		r0 = add(r29,#128)
		r1 = memw(r29+#44)
	}
	{
		call memcpy
		r2 = r25
		r0 = add(r29,#128)
		r1 = memw(r29+#44)
	}
	{
		call memcpy
		r2 = r25
		r0 = add(r29,#128)
		r1 = memw(r29+#44)
	}
	{
		r0 = add(r29,#128)
		r2 = r25
		r1 = memw(r29+#44)
		r25 = memw(r29+#44)
	}
	{
		call memcpy
	}
	{
		r3:2 = memd(r29+#80)
		r1:0 = memd(r29+#88)
	}
	{
		r3:2 = add(r3:2,r17:16)
	}
	{
		p0 = cmp.eq(r3:2,r1:0)
		if (!p0.new) jump:t .LBB0_3
	}
	{
		r1:0 = memd(r29+#72)
	}
	{
		p0 = cmp.eq(r1:0,r21:20)
		if (p0.new) jump:nt .LBB0_5
	}
.LBB0_6:
	{
		r21:20 = combine(#0,#0)
	}
	.p2align	4
.LBB0_7:
	{
		call memcpy
		r1 = r25
		r0 = add(r29,#128)
		r2 = memw(r29+#48)
	}
	{
		r21:20 = add(r21:20,r19:18)
		r2 = #128
		r1:0 = memd(r29+#72)
	}
	{
		p0 = cmp.eq(r21:20,r1:0)
		if (!p0.new) jump:t .LBB0_7
	}
	{
		jump .LBB0_8
	}
.LBB0_5:
	{
		r2 = #128
		jump .LBB0_8
	}
	.p2align	4
.LBB0_20:
	{
		r2 = extractu(r2,#7,#1)
		r1:0 = combine(#0,#0)
		if (cmp.eq(r2.new,#0)) jump:nt .LBB0_21
	}
.LBB0_8:
	{
		r5:4 = combine(r27,r26)
		r1:0 = combine(#0,#0)
	}
	.p2align	4
.LBB0_9:
	{
		r7:6 = add(r5:4,r1:0)
	}
	{
		r8 = lsr(r6,#1)
		r9 = lsr(r7,#1)
	}
	{
		r8 = insert(r7,#1,#31)
	}
	{
		r7:6 = add(r9:8,r19:18)
		p0 = cmp.gt(r2,r8)
		if (!p0.new) r4 = add(r8,#0)
	}
	{
		if (p0) r0 = add(r6,#0)
		if (p0) r1 = add(r7,#0)
		if (!p0) r5 = add(r9,#0)
	}
	{
		p0 = cmp.gtu(r5:4,r1:0)
		if (p0.new) jump:t .LBB0_9
	}
	{
		r5:4 = minu(r1:0,r27:26)
		r7:6 = combine(#0,#0)
		jump .LBB0_11
	}
	.p2align	4
.LBB0_19:
	{
		r7:6 = add(r7:6,r19:18)
		r9:8 = memd(r29+#64)
	}
	{
		p0 = cmp.gtu(r9:8,r7:6)
		if (!p0.new) jump:nt .LBB0_20
	}
.LBB0_11:
	{
		r9:8 = combine(#0,#0)
		jump .LBB0_12
	}
	.p2align	4
.LBB0_18:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		if (!p0.new) jump:nt .LBB0_19
	}
.LBB0_12:
	{
		p0 = cmp.gtu(r1:0,r9:8)
		r3 = r27
		r15:14 = combine(r9,r8)
	}
	{
		p1 = cmp.gtu(r3:2,r9:8)
		r8 = mux(p0,r4,r26)
		r9 = mux(p0,r5,r27)
		if (!p1.new) jump:nt .LBB0_18
	}
	{
		p0 = cmp.gtu(r9:8,r15:14)
		if (!p0.new) jump:nt .LBB0_18
	}
	{
		r3 = addasl(r24,r2,#2)
		r13:12 = sub(r9:8,r15:14)
		r11:10 = combine(#0,#0)
	}
	{
		r21:20 = and(r13:12,r23:22)
		r13:12 = combine(r15,r14)
	}
	{
		p0 = cmp.eq(r21:20,r11:10)
		if (p0.new) jump:nt .LBB0_17
	}
	{
		r13:12 = combine(r15,r14)
	}
	.p2align	5
.LBB0_16:
	{
		r11:10 = add(r11:10,r19:18)
		r28 = memw(r24+r12<<#2)
		r25 = memw(r3+r12<<#2)
	}
	{
		p0 = cmp.eq(r11:10,r21:20)
	}
	{
		r28 = sfadd(r28,r25)
		r13:12 = add(r13:12,r19:18)
		if (!p0) jump:nt .LBB0_16
		memw(r24+r12<<#2) = r28.new
	}
.LBB0_17:
	{
		r15:14 = sub(r15:14,r9:8)
		r11:10 = combine(#-1,#-8)
	}
	{
		p0 = cmp.gtu(r15:14,r11:10)
		if (p0.new) jump:t .LBB0_18
	}
	.p2align	4
.LBB0_61:
	{
		r28 = add(r12,#1)
		r10 = add(r12,#2)
		r14 = memw(r24+r12<<#2)
		r15 = memw(r3+r12<<#2)
	}
	{
		r11 = add(r12,#3)
	}
	{
		r14 = sfadd(r14,r15)
		memw(r24+r12<<#2) = r14.new
	}
	{
		r14 = memw(r24+r28<<#2)
		r21 = memw(r3+r28<<#2)
	}
	{
		r14 = sfadd(r14,r21)
		r21 = add(r12,#5)
		memw(r24+r28<<#2) = r14.new
	}
	{
		r14 = memw(r24+r10<<#2)
		r28 = memw(r3+r10<<#2)
	}
	{
		r14 = sfadd(r14,r28)
		r28 = add(r12,#4)
		memw(r24+r10<<#2) = r14.new
	}
	{
		r14 = memw(r24+r11<<#2)
		r10 = memw(r3+r11<<#2)
	}
	{
		r14 = sfadd(r14,r10)
		memw(r24+r11<<#2) = r14.new
	}
	{
		r14 = memw(r24+r28<<#2)
		r20 = memw(r3+r28<<#2)
	}
	{
		r14 = sfadd(r14,r20)
		r28 = add(r12,#6)
		memw(r24+r28<<#2) = r14.new
	}
	{
		r14 = memw(r24+r21<<#2)
		r20 = memw(r3+r21<<#2)
	}
	{
		r14 = sfadd(r14,r20)
		r13:12 = add(r13:12,r17:16)
		r20 = add(r12,#7)
		memw(r24+r21<<#2) = r14.new
	}
	{
		p0 = cmp.gtu(r9:8,r13:12)
		r14 = memw(r24+r28<<#2)
		r21 = memw(r3+r28<<#2)
	}
	{
		r14 = sfadd(r14,r21)
		memw(r24+r28<<#2) = r14.new
	}
	{
		r14 = memw(r24+r20<<#2)
		r21 = memw(r3+r20<<#2)
	}
	{
		r14 = sfadd(r14,r21)
		if (p0) jump:nt .LBB0_61
		memw(r24+r20<<#2) = r14.new
	}
	{
		jump .LBB0_18
	}
	.p2align	4
.LBB0_21:
	{
		r3:2 = combine(#0,#0)
	}
	.p2align	5
.LBB0_22:
	{
		r5:4 = add(r3:2,r27:26)
		r3:2 = combine(#0,#1)
	}
	{
		r3:2 += lsr(r5:4,#1)
	}
	{
		p0 = cmp.gtu(r27:26,r3:2)
		if (p0.new) jump:t .LBB0_22
	}
	{
		r3:2 = combine(r27,r26)
		r21:20 = combine(#0,#0)
		r15:14 = memd(r29+#88)
	}
	.p2align	4
.LBB0_24:
	{
		r5:4 = add(r3:2,r1:0)
	}
	{
		r6 = lsr(r4,#1)
		r7 = lsr(r5,#1)
	}
	{
		r6 = insert(r5,#1,#31)
	}
	{
		p0 = cmp.gt(r7:6,r21:20)
		r5:4 = add(r7:6,r19:18)
		if (p0.new) r2 = add(r6,#0)
	}
	{
		if (!p0) r0 = add(r4,#0)
		if (!p0) r1 = add(r5,#0)
		if (p0) r3 = add(r7,#0)
	}
	{
		p0 = cmp.gtu(r3:2,r1:0)
		if (p0.new) jump:t .LBB0_24
	}
	{
		r3:2 = minu(r1:0,r27:26)
		r8 = memw(r29+#52)
		r5 = memw(r29+#60)
	}
	{
		p0 = r8
		r7:6 = memd(r29+#104)
		r4 = memw(r29+#128)
	}
	{
		r5 = addasl(r5,r6,#2)
		r7:6 = combine(#0,#0)
		if (!p0) jump:nt .LBB0_26
	}
	{
		jump .LBB0_53
	}
	.p2align	4
.LBB0_51:
	{
		r7:6 = add(r7:6,r17:16)
	}
	{
		p0 = cmp.eq(r7:6,r15:14)
		if (p0.new) jump:nt .LBB0_52
	}
.LBB0_26:
	{
		r13:12 = combine(#0,#0)
		jump .LBB0_27
	}
	.p2align	4
.LBB0_29:
	{
		p0 = cmp.gtu(r27:26,r13:12)
		r9:8 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_30
	}
.LBB0_27:
	{
		p0 = cmp.gtu(r1:0,r13:12)
		p1 = cmp.eq(r13:12,r21:20)
	}
	{
		r12 = mux(p0,r2,r26)
		r13 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_29
	}
	{
		p0 = cmp.eq(r13:12,r21:20)
		jump .LBB0_29
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_32:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		r13:12 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_33
	}
.LBB0_30:
	{
		p0 = cmp.gtu(r1:0,r9:8)
		p1 = cmp.eq(r9:8,r21:20)
	}
	{
		r8 = mux(p0,r2,r26)
		r9 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_32
	}
	{
		p0 = cmp.eq(r9:8,r21:20)
		jump .LBB0_32
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_35:
	{
		p0 = cmp.gtu(r27:26,r13:12)
		r9:8 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_36
	}
.LBB0_33:
	{
		p0 = cmp.gtu(r1:0,r13:12)
		p1 = cmp.eq(r13:12,r21:20)
	}
	{
		r12 = mux(p0,r2,r26)
		r13 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_35
	}
	{
		p0 = cmp.eq(r13:12,r21:20)
		jump .LBB0_35
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_38:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		r13:12 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_39
	}
.LBB0_36:
	{
		p0 = cmp.gtu(r1:0,r9:8)
		p1 = cmp.eq(r9:8,r21:20)
	}
	{
		r8 = mux(p0,r2,r26)
		r9 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_38
	}
	{
		p0 = cmp.eq(r9:8,r21:20)
		jump .LBB0_38
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_41:
	{
		p0 = cmp.gtu(r27:26,r13:12)
		r9:8 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_42
	}
.LBB0_39:
	{
		p0 = cmp.gtu(r1:0,r13:12)
		p1 = cmp.eq(r13:12,r21:20)
	}
	{
		r12 = mux(p0,r2,r26)
		r13 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_41
	}
	{
		p0 = cmp.eq(r13:12,r21:20)
		jump .LBB0_41
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_44:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		r13:12 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_45
	}
.LBB0_42:
	{
		p0 = cmp.gtu(r1:0,r9:8)
		p1 = cmp.eq(r9:8,r21:20)
	}
	{
		r8 = mux(p0,r2,r26)
		r9 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_44
	}
	{
		p0 = cmp.eq(r9:8,r21:20)
		jump .LBB0_44
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_47:
	{
		p0 = cmp.gtu(r27:26,r13:12)
		r9:8 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_48
	}
.LBB0_45:
	{
		p0 = cmp.gtu(r1:0,r13:12)
		p1 = cmp.eq(r13:12,r21:20)
	}
	{
		r12 = mux(p0,r2,r26)
		r13 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_47
	}
	{
		p0 = cmp.eq(r13:12,r21:20)
		jump .LBB0_47
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_50:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		if (!p0.new) jump:nt .LBB0_51
	}
.LBB0_48:
	{
		p0 = cmp.gtu(r1:0,r9:8)
		p1 = cmp.eq(r9:8,r21:20)
	}
	{
		r8 = mux(p0,r2,r26)
		r9 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_50
	}
	{
		p0 = cmp.eq(r9:8,r21:20)
		jump .LBB0_50
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_52:
	{
		r7:6 = memd(r29+#72)
	}
	{
		p0 = cmp.eq(r7:6,r21:20)
		if (p0.new) jump:nt .LBB0_59
	}
.LBB0_53:
	{
		r7:6 = combine(#0,#0)
		jump .LBB0_54
	}
	.p2align	4
.LBB0_58:
	{
		r7:6 = add(r7:6,r19:18)
		r9:8 = memd(r29+#72)
	}
	{
		p0 = cmp.eq(r7:6,r9:8)
		if (p0.new) jump:nt .LBB0_59
	}
.LBB0_54:
	{
		r9:8 = combine(#0,#0)
		jump .LBB0_55
	}
	.p2align	4
.LBB0_57:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		if (!p0.new) jump:nt .LBB0_58
	}
.LBB0_55:
	{
		p0 = cmp.gtu(r1:0,r9:8)
		p1 = cmp.eq(r9:8,r21:20)
	}
	{
		r8 = mux(p0,r2,r26)
		r9 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_57
	}
	{
		p0 = cmp.eq(r9:8,r21:20)
		jump .LBB0_57
		if (!p0.new) memw(r5+#0) = r4
	}
.LBB0_60:
	{
		r17:16 = memd(r30+#-8)
		r19:18 = memd(r30+#-16)
	}
	{
		r21:20 = memd(r30+#-24)
		r23:22 = memd(r30+#-32)
	}
	{
		r25:24 = memd(r30+#-40)
		r27:26 = memd(r30+#-48)
	}
	{
		r31:30 = dealloc_return(r30):raw
	}
.Lfunc_end0:
	.size	shared_reduce__range, .Lfunc_end0-shared_reduce__range

	.section	".note.GNU-stack","",@progbits
