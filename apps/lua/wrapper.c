/* loopbench app wrapper for Lua 5.4: run(n) creates a Lua state, loads
 * workload.lua (embedded at build time), calls bench(n) and returns its
 * integer checksum, then closes the state. Written for loopbench; Lua itself
 * is unmodified. A fresh state per call means run() can be repeated on one
 * instance: everything Lua allocated is freed before it returns. */
#include <stdlib.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "workload.h" /* generated: workload_lua[], workload_lua_len */

static void *alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

static void open(lua_State *L, const char *name, lua_CFunction f) {
    luaL_requiref(L, name, f, 1);
    lua_pop(L, 1);
}

__attribute__((export_name("run"))) int run(int n) {
    lua_State *L = lua_newstate(alloc, NULL);
    if (!L) __builtin_trap();
    open(L, LUA_GNAME, luaopen_base);
    open(L, LUA_TABLIBNAME, luaopen_table);
    open(L, LUA_STRLIBNAME, luaopen_string);
    open(L, LUA_MATHLIBNAME, luaopen_math);
    if (luaL_loadbufferx(L, (const char *)workload_lua, workload_lua_len, "workload", "t") != LUA_OK) __builtin_trap();
    lua_call(L, 0, 0);
    lua_getglobal(L, "bench");
    lua_pushinteger(L, n);
    lua_call(L, 1, 1);
    lua_Integer r = lua_tointeger(L, -1);
    lua_close(L);
    return (int)r;
}
