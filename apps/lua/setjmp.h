/* loopbench: wasm32 without the exception-handling proposal has no
 * setjmp/longjmp. Lua only longjmps to report an error; the workload raises
 * none, so a "throw" becomes a trap (the run fails loudly) and a "try" is a
 * plain call. This header shadows the libc one for the Lua build only. */
#ifndef LOOPBENCH_SETJMP_H
#define LOOPBENCH_SETJMP_H
typedef int jmp_buf[1];
#define setjmp(b) 0
#define longjmp(b, v) __builtin_trap()
#endif
