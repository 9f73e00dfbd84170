/* Reset entry (the boot ROM jumps here): stack, zeroed .bss, trap vector, then main(); its
   return value is the exit code written to SYSCTRL.EXIT. */
#include "soc_map.h"

    .section .text.start
    .globl _start
_start:
    la    sp, _stack_top
    la    t0, _bss_start
    la    t1, _bss_end
1:  bgeu  t0, t1, 2f
    sw    zero, 0(t0)
    addi  t0, t0, 4
    j     1b
2:  la    t0, trap_entry
    csrw  mtvec, t0
    call  main
    call  soc_exit

/* Any exception (a bus error, an illegal instruction) is fatal: report its cause and
   address, then stop (firmware/soc.c). */
    .align 2
trap_entry:
    csrr  a0, mcause
    csrr  a1, mepc
    csrr  a2, mtval
    la    sp, _stack_top
    call  trap_handler
4:  j     4b
