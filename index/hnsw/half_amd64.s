#include "textflag.h"

// func cpuidF16C() bool
//
// CPUID leaf 1, ECX bit 29: the CPU converts float32 to and from binary16
// (VCVTPS2PH, VCVTPH2PS). golang.org/x/sys/cpu does not report it.
TEXT ·cpuidF16C(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $29, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

// func maxAbsAVX2(v *float32, n int) uint32
//
// The largest |v[i]| as bits (sign cleared) over n elements, n a multiple
// of 8: non-negative floats order as their bit patterns, so this is an
// unsigned integer max (VPMAXUD), exact for every input. Four accumulators
// hide the instruction's latency.
TEXT ·maxAbsAVX2(SB), NOSPLIT, $0-20
	MOVQ v+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0x7fffffff, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

loop32:
	CMPQ CX, $32
	JL   loop8
	VPAND  (SI), Y15, Y4
	VPAND  32(SI), Y15, Y5
	VPAND  64(SI), Y15, Y6
	VPAND  96(SI), Y15, Y7
	VPMAXUD Y4, Y0, Y0
	VPMAXUD Y5, Y1, Y1
	VPMAXUD Y6, Y2, Y2
	VPMAXUD Y7, Y3, Y3
	ADDQ $128, SI
	SUBQ $32, CX
	JMP  loop32

loop8:
	CMPQ CX, $8
	JL   reduce
	VPAND  (SI), Y15, Y4
	VPMAXUD Y4, Y0, Y0
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  loop8

reduce:
	VPMAXUD Y1, Y0, Y0
	VPMAXUD Y3, Y2, Y2
	VPMAXUD Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPMAXUD X1, X0, X0
	MOVQ X0, AX
	MOVL AX, ret+16(FP)
	VZEROUPPER
	RET

// func halfBlocksF16C(out *byte, v *float32, n int, inv, scale float32, round bool) int
//
// Encodes v[i]·inv to binary16 at out[2i:], eight components at a time,
// while every component of the block scales to ±0 or to a normal half
// (2⁻¹⁴ ≤ |x| < 2¹⁵): there VCVTPS2PH rounding to nearest, ties to even,
// gives exactly encodeHalf's bits, and VCVTPH2PS is fromHalf. With round
// it also sets v[i] to the rounded value times scale. It stops before the
// first block holding another value (the caller converts that block one
// component at a time) or fewer than 8 components, and returns how many
// it did (a multiple of 8).
TEXT ·halfBlocksF16C(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS inv+24(FP), Y15
	VBROADCASTSS scale+28(FP), Y14
	MOVBLZX round+32(FP), R8
	MOVL $0x7fffffff, AX
	MOVQ AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x387fffff, AX
	MOVQ AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0x47000000, AX
	MOVQ AX, X11
	VPBROADCASTD X11, Y11
	VPXOR Y10, Y10, Y10
	XORQ BX, BX

loop:
	LEAQ 8(BX), DX
	CMPQ DX, CX
	JGT  done
	VMULPS   (SI)(BX*4), Y15, Y0
	VPAND    Y13, Y0, Y1
	VPCMPGTD Y12, Y1, Y2 // |y| ≥ 2⁻¹⁴
	VPCMPGTD Y1, Y11, Y3 // |y| < 2¹⁵
	VPAND    Y3, Y2, Y2
	VPCMPEQD Y10, Y1, Y3 // y = ±0
	VPOR     Y3, Y2, Y2
	VMOVMSKPS Y2, AX
	CMPL AX, $0xff
	JNE  done
	VCVTPS2PH $0, Y0, X5
	VMOVDQU X5, (DI)(BX*2)
	TESTQ R8, R8
	JZ   next
	VCVTPH2PS X5, Y6
	VMULPS Y14, Y6, Y6
	VMOVUPS Y6, (SI)(BX*4)

next:
	MOVQ DX, BX
	JMP  loop

done:
	MOVQ BX, ret+40(FP)
	VZEROUPPER
	RET
