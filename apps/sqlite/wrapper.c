/* loopbench app wrapper for SQLite: run(n) opens a `:memory:` database,
 * inserts n x 2000 rows, builds an index, runs a join with aggregates, an
 * indexed range query per group and a GROUP BY on text, and returns an
 * FNV-1a hash of every result value. Written for loopbench; SQLite itself
 * is the unmodified amalgamation.
 *
 * Built with SQLITE_OS_OTHER: there is no OS layer, so this file provides
 * sqlite3_os_init with a VFS that opens no files (a `:memory:` database and
 * in-memory temp storage need none), gives deterministic "randomness" and a
 * fixed clock. The same SQL over the same rows in any SQLite gives the same
 * hash (apps/sqlite/reference.py computes it with Python's sqlite3). */
#include <stdint.h>
#include <string.h>
#include "sqlite3.h"

#define ROWS_PER_STEP 2000
#define GROUPS 16

static int mem_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out) {
    (void)v; (void)name; (void)flags; (void)out;
    f->pMethods = 0;
    return SQLITE_CANTOPEN;
}
static int mem_delete(sqlite3_vfs *v, const char *name, int sync) {
    (void)v; (void)name; (void)sync;
    return SQLITE_OK;
}
static int mem_access(sqlite3_vfs *v, const char *name, int flags, int *res) {
    (void)v; (void)name; (void)flags;
    *res = 0;
    return SQLITE_OK;
}
static int mem_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out) {
    (void)v;
    sqlite3_snprintf(n, out, "%s", name);
    return SQLITE_OK;
}
static int mem_randomness(sqlite3_vfs *v, int n, char *out) {
    (void)v;
    for (int i = 0; i < n; i++) out[i] = (char)(i * 131 + 7);
    return n;
}
static int mem_sleep(sqlite3_vfs *v, int us) {
    (void)v;
    return us;
}
static int mem_current_time(sqlite3_vfs *v, double *t) {
    (void)v;
    *t = 2460000.5;
    return SQLITE_OK;
}
static int mem_last_error(sqlite3_vfs *v, int n, char *out) {
    (void)v; (void)n; (void)out;
    return 0;
}

static sqlite3_vfs mem_vfs = {
    1, sizeof(sqlite3_file), 64, 0, "loopbench-memory", 0,
    mem_open, mem_delete, mem_access, mem_full_pathname,
    0, 0, 0, 0,
    mem_randomness, mem_sleep, mem_current_time, mem_last_error,
};

int sqlite3_os_init(void) { return sqlite3_vfs_register(&mem_vfs, 1); }
int sqlite3_os_end(void) { return SQLITE_OK; }

static uint64_t xs;
static uint32_t next_rand(void) {
    xs ^= xs >> 12;
    xs ^= xs << 25;
    xs ^= xs >> 27;
    return (uint32_t)((xs * 0x2545F4914F6CDD1DULL) >> 32);
}

static uint32_t hash;
static void fnv(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) { hash ^= b[i]; hash *= 16777619u; }
}

static void must(int rc) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) __builtin_trap();
}

/* Step a prepared query to the end, hashing every value of every row. */
static void hash_rows(sqlite3_stmt *s) {
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(s); c++) {
            if (sqlite3_column_type(s, c) == SQLITE_INTEGER) {
                int64_t v = sqlite3_column_int64(s, c);
                unsigned char le[8];
                for (int k = 0; k < 8; k++) le[k] = (unsigned char)((uint64_t)v >> (8 * k));
                fnv(le, 8);
            } else {
                fnv(sqlite3_column_text(s, c), (size_t)sqlite3_column_bytes(s, c));
            }
        }
        unsigned char sep = 0xFF;
        fnv(&sep, 1);
    }
    if (rc != SQLITE_DONE) __builtin_trap();
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *s = 0;
    must(sqlite3_prepare_v2(db, sql, -1, &s, 0));
    return s;
}

__attribute__((export_name("run"))) int run(int n) {
    sqlite3 *db = 0;
    hash = 2166136261u;
    xs = 0x5D1B5EEDULL;
    must(sqlite3_open(":memory:", &db));
    must(sqlite3_exec(db,
        "CREATE TABLE grp(id INTEGER PRIMARY KEY, label TEXT NOT NULL);"
        "CREATE TABLE item(id INTEGER PRIMARY KEY, grp INTEGER NOT NULL,"
        " val INTEGER NOT NULL, name TEXT NOT NULL);", 0, 0, 0));
    sqlite3_stmt *ins = prepare(db, "INSERT INTO grp(id, label) VALUES (?1, ?2)");
    for (int g = 0; g < GROUPS; g++) {
        char label[16];
        sqlite3_snprintf(sizeof label, label, "group-%02d", GROUPS - 1 - g);
        sqlite3_bind_int(ins, 1, g);
        sqlite3_bind_text(ins, 2, label, -1, SQLITE_TRANSIENT);
        must(sqlite3_step(ins));
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    must(sqlite3_exec(db, "BEGIN", 0, 0, 0));
    ins = prepare(db, "INSERT INTO item(grp, val, name) VALUES (?1, ?2, ?3)");
    for (int i = 0; i < n * ROWS_PER_STEP; i++) {
        uint32_t r = next_rand();
        char name[16];
        sqlite3_snprintf(sizeof name, name, "item-%u", (r >> 4) % 1000);
        sqlite3_bind_int(ins, 1, (int)(r % GROUPS));
        sqlite3_bind_int(ins, 2, (int)((r >> 8) % 100000));
        sqlite3_bind_text(ins, 3, name, -1, SQLITE_TRANSIENT);
        must(sqlite3_step(ins));
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    must(sqlite3_exec(db, "COMMIT", 0, 0, 0));
    must(sqlite3_exec(db, "CREATE INDEX item_grp_val ON item(grp, val)", 0, 0, 0));

    sqlite3_stmt *q = prepare(db,
        "SELECT g.label, count(*), sum(i.val), min(i.val), max(i.val)"
        " FROM item i JOIN grp g ON g.id = i.grp GROUP BY g.label ORDER BY g.label");
    hash_rows(q);
    sqlite3_finalize(q);
    q = prepare(db,
        "SELECT count(*), coalesce(sum(val), 0) FROM item"
        " WHERE grp = ?1 AND val BETWEEN ?2 AND ?3");
    for (int g = 0; g < GROUPS; g++) {
        sqlite3_bind_int(q, 1, g);
        sqlite3_bind_int(q, 2, g * 1000);
        sqlite3_bind_int(q, 3, g * 1000 + 20000);
        hash_rows(q);
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    q = prepare(db,
        "SELECT name, count(*) AS c, sum(val) FROM item GROUP BY name"
        " ORDER BY c DESC, name LIMIT 10");
    hash_rows(q);
    sqlite3_finalize(q);
    must(sqlite3_close(db));
    return (int)hash;
}
