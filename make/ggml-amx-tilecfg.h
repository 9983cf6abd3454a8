/* Force-included into llama.cpp's C++ build (Makefile, LLAMA_CMAKE_ARGS).
 *
 * GCC 12's _tile_loadconfig (amxtileintrin.h) tells the compiler that LDTILECFG reads 8
 * bytes, not the 64 of a tile configuration, so at -O2 and above the stores that fill in
 * the rows and column widths of ggml's configuration (ggml-cpu/amx/mmq.cpp,
 * ggml_tile_config_init) are dropped as dead, and AMX runs on a configuration of empty
 * tiles. This definition names all 64 bytes as read. Clang's builtin is right already. */
#if defined(__cplusplus) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#undef _tile_loadconfig
#define _tile_loadconfig(config) \
    __asm__ volatile("ldtilecfg\t%X0" ::"m"(*(const unsigned char(*)[64])(config)))
#endif
