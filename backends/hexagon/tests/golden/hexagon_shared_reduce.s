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
		memd(r29+#-16) = r17:16
		allocframe(r29,#1168):raw
	}
	{
		memd(r29+#1152) = r19:18
		memd(r29+#1144) = r21:20
	}
	{
		memd(r29+#1136) = r23:22
		memd(r29+#1128) = r25:24
	}
	{
		if (!p0) jump:nt .LBB0_61
		memd(r29+#1120) = r27:26
		memd(r29+#80) = r5:4
	}
	{
		r19:18 = combine(r3,r2)
		r3 = #0
		r6 = memw(r0+#0)
		r4 = memw(r1+#16)
	}
	{
		r27 = #0
		r2 = memw(r1+#0)
		r5 = memw(r1+#20)
	}
	{
		r8 = r2
		r1:0 = combine(r19,r18)
		r7 = memw(r0+#4)
		r26 = memw(r1+#12)
	}
	{
		r17:16 = mpyu(r5,r4)
		r6 = memw(r6+#0)
		memw(r29+#8) = r6.new
	}
	{
		r6 = memw(r7+#0)
		memd(r29+#56) = r9:8
	}
	{
		call __hexagon_umoddi3
		memw(r29+#12) = r6
	}
	{
		r5:4 = combine(#0,#7)
		r25:24 = combine(#0,#8)
		r2 = #-8
	}
	{
		r28 = asl(r26,#2)
		r5:4 = and(r17:16,r5:4)
		r3 = ##1073741823
	}
	{
		r15:14 = and(r17:16,r3:2)
		p2 = cmp.gtu(r25:24,r17:16)
		r23 = add(r29,#88)
		memd(r29+#24) = r17:16
	}
	{
		r21:20 = combine(#-1,#-8)
		p0 = cmp.gtu(r26,#1)
		r17:16 = combine(#0,#1)
		memd(r29+#32) = r5:4
	}
	{
		r4 = p2
		r5 = p0
		memw(r29+#4) = r28
	}
	{
		memw(r29+#20) = r5
		memd(r29+#48) = r15:14
	}
	{
		jump .LBB0_2
		memw(r29+#16) = r4
	}
	.p2align	4
.LBB0_60:
	{
		r7:6 = add(r1:0,r17:16)
		r3:2 = memd(r29+#56)
		r19:18 = memd(r29+#64)
	}
	{
		r19:18 = add(r19:18,r17:16)
		r3 = r27
		r4 = r2
	}
	{
		p0 = cmp.eq(r7:6,r3:2)
		r5:4 = memd(r29+#80)
		memd(r29+#56) = r5:4
	}
	{
		p1 = cmp.gt(r5:4,r19:18)
		r0 = mux(p0,r27,r6)
		r1 = mux(p0,r27,r7)
		if (!p1.new) jump:nt .LBB0_61
	}
.LBB0_2:
	{
		r5 = mpyi(r26,r0)
		r3:2 = combine(#0,#0)
		r4 = memw(r29+#8)
		memd(r29+#64) = r19:18
	}
	{
		r22 = addasl(r4,r5,#2)
		r18 = r28
		if (p2) jump:nt .LBB0_6
		memd(r29+#72) = r1:0
	}
	.p2align	4
.LBB0_3:
	{
		r1 = r22
		r2 = r18
		r0 = add(r29,#88)
		memd(r29+#40) = r3:2
	}
	{
		call memcpy
	}
	{
		call memcpy
		r1 = r22
		r0 = add(r29,#88)
		r2 = r18
	}
	{
		call memcpy
		r1 = r22
		r0 = add(r29,#88)
		r2 = r18
	}
	{
		call memcpy
		r1 = r22
		r0 = add(r29,#88)
		r2 = r18
	}
	{
		call memcpy
		r1 = r22
		r0 = add(r29,#88)
		r2 = r18
	}
	{
		call memcpy
		r1 = r22
		r0 = add(r29,#88)
		r2 = r18
	}
	{
		call memcpy
		r1 = r22
		r0 = add(r29,#88)
		r2 = r18
	}
	{
		call memcpy
		r1 = r22
		r0 = add(r29,#88)
		r2 = r18
	}
	{
		r3:2 = memd(r29+#40)
		r1:0 = memd(r29+#48)
	}
	{
		r3:2 = add(r3:2,r25:24)
	}
	{
		p0 = cmp.eq(r3:2,r1:0)
		if (!p0.new) jump:t .LBB0_3
	}
	{
		r3:2 = combine(#0,#0)
		r1:0 = memd(r29+#32)
	}
	{
		p0 = cmp.eq(r1:0,r3:2)
		if (p0.new) jump:nt .LBB0_5
	}
.LBB0_6:
	{
		r19:18 = combine(#0,#0)
	}
	.p2align	4
.LBB0_7:
	{
		call memcpy
		r1 = r22
		r0 = add(r29,#88)
		r2 = memw(r29+#4)
	}
	{
		r19:18 = add(r19:18,r17:16)
		r1:0 = memd(r29+#32)
	}
	{
		p0 = cmp.eq(r19:18,r1:0)
		r0 = #128
		if (!p0.new) jump:t .LBB0_7
	}
	{
		jump .LBB0_8
	}
.LBB0_5:
	{
		r0 = #128
		jump .LBB0_8
	}
	.p2align	4
.LBB0_21:
	{
		r0 = extractu(r0,#7,#1)
		if (cmp.eq(r0.new,#0)) jump:nt .LBB0_22
	}
.LBB0_8:
	{
		p0 = cmp.gtu(r26,r0)
		r3:2 = combine(r27,r26)
		if (!p0.new) jump:t .LBB0_11
	}
	{
		r3:2 = combine(#0,#0)
		r5:4 = combine(r27,r26)
	}
	.p2align	4
.LBB0_10:
	{
		r7:6 = add(r5:4,r3:2)
	}
	{
		r8 = lsr(r6,#1)
		r9 = lsr(r7,#1)
	}
	{
		r8 = insert(r7,#1,#31)
	}
	{
		r7:6 = add(r9:8,r17:16)
		p0 = cmp.gt(r0,r8)
		if (!p0.new) r4 = add(r8,#0)
	}
	{
		if (p0) r2 = add(r6,#0)
		if (p0) r3 = add(r7,#0)
		if (!p0) r5 = add(r9,#0)
	}
	{
		p0 = cmp.gtu(r5:4,r3:2)
		if (p0.new) jump:t .LBB0_10
	}
.LBB0_11:
	{
		r5:4 = minu(r3:2,r27:26)
		r7:6 = combine(#0,#0)
		jump .LBB0_12
	}
	.p2align	4
.LBB0_20:
	{
		r7:6 = add(r7:6,r17:16)
		r9:8 = memd(r29+#24)
	}
	{
		p0 = cmp.gtu(r9:8,r7:6)
		if (!p0.new) jump:nt .LBB0_21
	}
.LBB0_12:
	{
		r9:8 = combine(#0,#0)
		jump .LBB0_13
	}
	.p2align	4
.LBB0_19:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		if (!p0.new) jump:nt .LBB0_20
	}
.LBB0_13:
	{
		p0 = cmp.gtu(r3:2,r9:8)
		r1 = r27
		r15:14 = combine(r9,r8)
	}
	{
		p1 = cmp.gtu(r1:0,r9:8)
		r8 = mux(p0,r4,r26)
		r9 = mux(p0,r5,r27)
		if (!p1.new) jump:nt .LBB0_19
	}
	{
		p0 = cmp.gtu(r9:8,r15:14)
		if (!p0.new) jump:nt .LBB0_19
	}
	{
		r1 = addasl(r23,r0,#2)
		r13:12 = sub(r9:8,r15:14)
		r19:18 = combine(#0,#7)
		r11:10 = combine(#0,#0)
	}
	{
		r19:18 = and(r13:12,r19:18)
		r13:12 = combine(r15,r14)
	}
	{
		p0 = cmp.eq(r19:18,r11:10)
		if (p0.new) jump:nt .LBB0_18
	}
	{
		r13:12 = combine(r15,r14)
	}
	.p2align	5
.LBB0_17:
	{
		r11:10 = add(r11:10,r17:16)
		r28 = memw(r23+r12<<#2)
		r22 = memw(r1+r12<<#2)
	}
	{
		p0 = cmp.eq(r11:10,r19:18)
	}
	{
		r28 = sfadd(r28,r22)
		r13:12 = add(r13:12,r17:16)
		if (!p0) jump:nt .LBB0_17
		memw(r23+r12<<#2) = r28.new
	}
.LBB0_18:
	{
		r15:14 = sub(r15:14,r9:8)
	}
	{
		p0 = cmp.gtu(r15:14,r21:20)
		if (p0.new) jump:t .LBB0_19
	}
	.p2align	4
.LBB0_62:
	{
		r28 = add(r12,#1)
		r10 = add(r12,#2)
		r14 = memw(r23+r12<<#2)
		r15 = memw(r1+r12<<#2)
	}
	{
		r11 = add(r12,#3)
	}
	{
		r14 = sfadd(r14,r15)
		memw(r23+r12<<#2) = r14.new
	}
	{
		r14 = memw(r23+r28<<#2)
		r19 = memw(r1+r28<<#2)
	}
	{
		r14 = sfadd(r14,r19)
		r19 = add(r12,#5)
		memw(r23+r28<<#2) = r14.new
	}
	{
		r14 = memw(r23+r10<<#2)
		r28 = memw(r1+r10<<#2)
	}
	{
		r14 = sfadd(r14,r28)
		r28 = add(r12,#4)
		memw(r23+r10<<#2) = r14.new
	}
	{
		r14 = memw(r23+r11<<#2)
		r10 = memw(r1+r11<<#2)
	}
	{
		r14 = sfadd(r14,r10)
		memw(r23+r11<<#2) = r14.new
	}
	{
		r14 = memw(r23+r28<<#2)
		r18 = memw(r1+r28<<#2)
	}
	{
		r14 = sfadd(r14,r18)
		r28 = add(r12,#6)
		memw(r23+r28<<#2) = r14.new
	}
	{
		r14 = memw(r23+r19<<#2)
		r18 = memw(r1+r19<<#2)
	}
	{
		r14 = sfadd(r14,r18)
		r13:12 = add(r13:12,r25:24)
		r18 = add(r12,#7)
		memw(r23+r19<<#2) = r14.new
	}
	{
		p0 = cmp.gtu(r9:8,r13:12)
		r14 = memw(r23+r28<<#2)
		r19 = memw(r1+r28<<#2)
	}
	{
		r14 = sfadd(r14,r19)
		memw(r23+r28<<#2) = r14.new
	}
	{
		r14 = memw(r23+r18<<#2)
		r19 = memw(r1+r18<<#2)
	}
	{
		r14 = sfadd(r14,r19)
		if (p0) jump:nt .LBB0_62
		memw(r23+r18<<#2) = r14.new
	}
	{
		jump .LBB0_19
	}
	.p2align	4
.LBB0_22:
	{
		r11:10 = combine(r27,r26)
		r9:8 = combine(#0,#0)
		r0 = memw(r29+#16)
		r2 = memw(r29+#20)
	}
	{
		p2 = r0
		p0 = r2
		if (!p0.new) jump:t .LBB0_25
		r1:0 = memd(r29+#72)
	}
	{
		r11:10 = combine(#0,#0)
		r3:2 = combine(r27,r26)
	}
	.p2align	4
.LBB0_24:
	{
		r5:4 = add(r3:2,r11:10)
	}
	{
		r6 = lsr(r4,#1)
		r7 = lsr(r5,#1)
	}
	{
		r6 = insert(r5,#1,#31)
	}
	{
		p0 = cmp.gt(r7:6,r9:8)
		r5:4 = add(r7:6,r17:16)
		if (p0.new) r2 = add(r6,#0)
	}
	{
		if (!p0) r10 = add(r4,#0)
		if (!p0) r11 = add(r5,#0)
		if (p0) r3 = add(r7,#0)
	}
	{
		p0 = cmp.gtu(r3:2,r11:10)
		if (p0.new) jump:t .LBB0_24
	}
.LBB0_25:
	{
		r3:2 = minu(r11:10,r27:26)
		r7:6 = combine(#0,#0)
		r5 = memw(r29+#12)
		r4 = memw(r29+#88)
	}
	{
		r5 = addasl(r5,r0,#2)
		if (p2) jump:nt .LBB0_54
		r28 = memw(r29+#4)
		r15:14 = memd(r29+#48)
	}
	{
		r19:18 = combine(#0,#0)
		jump .LBB0_27
	}
	.p2align	4
.LBB0_52:
	{
		r7:6 = add(r7:6,r25:24)
	}
	{
		p0 = cmp.eq(r7:6,r15:14)
		if (p0.new) jump:nt .LBB0_53
	}
.LBB0_27:
	{
		r13:12 = combine(#0,#0)
		jump .LBB0_28
	}
	.p2align	4
.LBB0_30:
	{
		p0 = cmp.gtu(r27:26,r13:12)
		r9:8 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_31
	}
.LBB0_28:
	{
		p0 = cmp.gtu(r11:10,r13:12)
		p1 = cmp.eq(r13:12,r19:18)
	}
	{
		r12 = mux(p0,r2,r26)
		r13 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_30
	}
	{
		p0 = cmp.eq(r13:12,r19:18)
		jump .LBB0_30
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_33:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		if (!p0.new) jump:nt .LBB0_34
	}
.LBB0_31:
	{
		p0 = cmp.gtu(r11:10,r9:8)
		r19:18 = combine(#0,#0)
		r13:12 = combine(#0,#0)
	}
	{
		p1 = cmp.eq(r9:8,r19:18)
		r8 = mux(p0,r2,r26)
		r9 = mux(p0,r3,r27)
		if (!p1.new) jump:nt .LBB0_33
	}
	{
		p0 = cmp.eq(r9:8,r13:12)
		jump .LBB0_33
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_36:
	{
		p0 = cmp.gtu(r27:26,r13:12)
		r9:8 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_37
	}
.LBB0_34:
	{
		p0 = cmp.gtu(r11:10,r13:12)
		p1 = cmp.eq(r13:12,r19:18)
	}
	{
		r12 = mux(p0,r2,r26)
		r13 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_36
	}
	{
		p0 = cmp.eq(r13:12,r19:18)
		jump .LBB0_36
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_39:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		if (!p0.new) jump:nt .LBB0_40
	}
.LBB0_37:
	{
		p0 = cmp.gtu(r11:10,r9:8)
		r19:18 = combine(#0,#0)
		r13:12 = combine(#0,#0)
	}
	{
		p1 = cmp.eq(r9:8,r19:18)
		r8 = mux(p0,r2,r26)
		r9 = mux(p0,r3,r27)
		if (!p1.new) jump:nt .LBB0_39
	}
	{
		p0 = cmp.eq(r9:8,r13:12)
		jump .LBB0_39
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_42:
	{
		p0 = cmp.gtu(r27:26,r13:12)
		r9:8 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_43
	}
.LBB0_40:
	{
		p0 = cmp.gtu(r11:10,r13:12)
		p1 = cmp.eq(r13:12,r19:18)
	}
	{
		r12 = mux(p0,r2,r26)
		r13 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_42
	}
	{
		p0 = cmp.eq(r13:12,r19:18)
		jump .LBB0_42
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_45:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		if (!p0.new) jump:nt .LBB0_46
	}
.LBB0_43:
	{
		p0 = cmp.gtu(r11:10,r9:8)
		r19:18 = combine(#0,#0)
		r13:12 = combine(#0,#0)
	}
	{
		p1 = cmp.eq(r9:8,r19:18)
		r8 = mux(p0,r2,r26)
		r9 = mux(p0,r3,r27)
		if (!p1.new) jump:nt .LBB0_45
	}
	{
		p0 = cmp.eq(r9:8,r13:12)
		jump .LBB0_45
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_48:
	{
		p0 = cmp.gtu(r27:26,r13:12)
		r9:8 = combine(#0,#0)
		if (!p0.new) jump:nt .LBB0_49
	}
.LBB0_46:
	{
		p0 = cmp.gtu(r11:10,r13:12)
		p1 = cmp.eq(r13:12,r19:18)
	}
	{
		r12 = mux(p0,r2,r26)
		r13 = mux(p0,r3,r27)
		if (!p1) jump:nt .LBB0_48
	}
	{
		p0 = cmp.eq(r13:12,r19:18)
		jump .LBB0_48
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_51:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		if (!p0.new) jump:nt .LBB0_52
	}
.LBB0_49:
	{
		p0 = cmp.gtu(r11:10,r9:8)
		r19:18 = combine(#0,#0)
		r13:12 = combine(#0,#0)
	}
	{
		p1 = cmp.eq(r9:8,r19:18)
		r8 = mux(p0,r2,r26)
		r9 = mux(p0,r3,r27)
		if (!p1.new) jump:nt .LBB0_51
	}
	{
		p0 = cmp.eq(r9:8,r13:12)
		jump .LBB0_51
		if (!p0.new) memw(r5+#0) = r4
	}
	.p2align	4
.LBB0_53:
	{
		r9:8 = combine(#0,#0)
		r7:6 = memd(r29+#32)
	}
	{
		p0 = cmp.eq(r7:6,r9:8)
		if (p0.new) jump:nt .LBB0_60
	}
.LBB0_54:
	{
		r7:6 = combine(#0,#0)
		jump .LBB0_55
	}
	.p2align	4
.LBB0_59:
	{
		r7:6 = add(r7:6,r17:16)
		r9:8 = memd(r29+#32)
	}
	{
		p0 = cmp.eq(r7:6,r9:8)
		if (p0.new) jump:nt .LBB0_60
	}
.LBB0_55:
	{
		r9:8 = combine(#0,#0)
		jump .LBB0_56
	}
	.p2align	4
.LBB0_58:
	{
		p0 = cmp.gtu(r27:26,r9:8)
		if (!p0.new) jump:nt .LBB0_59
	}
.LBB0_56:
	{
		p0 = cmp.gtu(r11:10,r9:8)
		r19:18 = combine(#0,#0)
		r13:12 = combine(#0,#0)
	}
	{
		p1 = cmp.eq(r9:8,r19:18)
		r8 = mux(p0,r2,r26)
		r9 = mux(p0,r3,r27)
		if (!p1.new) jump:nt .LBB0_58
	}
	{
		p0 = cmp.eq(r9:8,r13:12)
		jump .LBB0_58
		if (!p0.new) memw(r5+#0) = r4
	}
.LBB0_61:
	{
		r17:16 = memd(r29+#1160)
		r19:18 = memd(r29+#1152)
	}
	{
		r21:20 = memd(r29+#1144)
		r23:22 = memd(r29+#1136)
	}
	{
		r25:24 = memd(r29+#1128)
		r27:26 = memd(r29+#1120)
	}
	{
		r31:30 = dealloc_return(r30):raw
	}
.Lfunc_end0:
	.size	shared_reduce__range, .Lfunc_end0-shared_reduce__range

	.section	".note.GNU-stack","",@progbits
