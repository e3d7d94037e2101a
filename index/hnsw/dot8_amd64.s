#include "textflag.h"

// func dot8VNNI(a, b *int8, n int) int32
//
// Σ a[i]·b[i] for i < n, n a multiple of 64, with AVX-512 VNNI.
// VPDPBUSD multiplies unsigned by signed bytes, so a is offset to
// a+128 (flipping its sign bit) and 128·Σb, accumulated by a second
// VPDPBUSD against a vector of ones, is subtracted at the end. Two
// accumulator pairs hide the instruction's latency.
TEXT ·dot8VNNI(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z4
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z5

loop128:
	CMPQ CX, $128
	JL   tail64
	VMOVDQU32 (DI), Z6
	VMOVDQU32 64(DI), Z8
	VPXORD    (SI), Z4, Z7
	VPXORD    64(SI), Z4, Z9
	VPDPBUSD  Z6, Z7, Z0
	VPDPBUSD  Z6, Z5, Z1
	VPDPBUSD  Z8, Z9, Z2
	VPDPBUSD  Z8, Z5, Z3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $128, CX
	JMP  loop128

tail64:
	CMPQ CX, $64
	JL   done
	VMOVDQU32 (DI), Z6
	VPXORD    (SI), Z4, Z7
	VPDPBUSD  Z6, Z7, Z0
	VPDPBUSD  Z6, Z5, Z1

done:
	VPADDD        Z2, Z0, Z0
	VPADDD        Z3, Z1, Z1
	VPSLLD        $7, Z1, Z1
	VPSUBD        Z1, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD        Y1, Y0, Y0
	VEXTRACTI128  $1, Y0, X1
	VPADDD        X1, X0, X0
	VPSHUFD       $0x4E, X0, X1
	VPADDD        X1, X0, X0
	VPSHUFD       $0xB1, X0, X1
	VPADDD        X1, X0, X0
	VMOVD         X0, AX
	VZEROUPPER
	MOVL          AX, ret+24(FP)
	RET

// func dot8AVX2(a, b *int8, n int) int32
//
// Σ a[i]·b[i] for i < n, n a multiple of 32, with AVX2: bytes are
// sign-extended to 16 bits and VPMADDWD sums adjacent products into
// 32-bit lanes.
TEXT ·dot8AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

loop:
	CMPQ CX, $32
	JL   done
	VPMOVSXBW (SI), Y2
	VPMOVSXBW (DI), Y3
	VPMOVSXBW 16(SI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD  Y3, Y2, Y2
	VPMADDWD  Y5, Y4, Y4
	VPADDD    Y2, Y0, Y0
	VPADDD    Y4, Y1, Y1
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $32, CX
	JMP  loop

done:
	VPADDD       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER
	MOVL         AX, ret+24(FP)
	RET

// func prefetch(p *int8, n int)
//
// Asks for the n bytes at p (n > 0) to be brought into the cache, one
// PREFETCHT0 per 64-byte line.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX

loop:
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	SUBQ       $64, CX
	JG         loop
	RET
