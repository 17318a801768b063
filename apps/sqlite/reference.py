#!/usr/bin/env python3
"""The expected checksum of apps/sqlite's run(n), computed independently
with Python's sqlite3 module: the same rows (the same xorshift stream), the
same SQL, the same FNV-1a over every result value. Usage: reference.py [n]"""
import sqlite3
import sys

M64 = (1 << 64) - 1
GROUPS = 16
ROWS_PER_STEP = 2000


def rand_stream(seed):
    x = seed
    while True:
        x ^= x >> 12
        x ^= (x << 25) & M64
        x ^= x >> 27
        yield ((x * 0x2545F4914F6CDD1D) & M64) >> 32


class Fnv:
    def __init__(self):
        self.h = 2166136261

    def feed(self, data):
        for b in data:
            self.h = ((self.h ^ b) * 16777619) & 0xFFFFFFFF

    def rows(self, cursor):
        for row in cursor:
            for v in row:
                if isinstance(v, int):
                    self.feed((v & M64).to_bytes(8, "little"))
                else:
                    self.feed(v.encode())
            self.feed(b"\xff")


def run(n):
    db = sqlite3.connect(":memory:")
    db.executescript(
        "CREATE TABLE grp(id INTEGER PRIMARY KEY, label TEXT NOT NULL);"
        "CREATE TABLE item(id INTEGER PRIMARY KEY, grp INTEGER NOT NULL,"
        " val INTEGER NOT NULL, name TEXT NOT NULL);"
    )
    db.executemany(
        "INSERT INTO grp(id, label) VALUES (?, ?)",
        [(g, "group-%02d" % (GROUPS - 1 - g)) for g in range(GROUPS)],
    )
    r = rand_stream(0x5D1B5EED)
    rows = []
    for _ in range(n * ROWS_PER_STEP):
        v = next(r)
        rows.append((v % GROUPS, (v >> 8) % 100000, "item-%d" % ((v >> 4) % 1000)))
    db.executemany("INSERT INTO item(grp, val, name) VALUES (?, ?, ?)", rows)
    db.execute("CREATE INDEX item_grp_val ON item(grp, val)")
    h = Fnv()
    h.rows(db.execute(
        "SELECT g.label, count(*), sum(i.val), min(i.val), max(i.val)"
        " FROM item i JOIN grp g ON g.id = i.grp GROUP BY g.label ORDER BY g.label"))
    for g in range(GROUPS):
        h.rows(db.execute(
            "SELECT count(*), coalesce(sum(val), 0) FROM item"
            " WHERE grp = ? AND val BETWEEN ? AND ?", (g, g * 1000, g * 1000 + 20000)))
    h.rows(db.execute(
        "SELECT name, count(*) AS c, sum(val) FROM item GROUP BY name"
        " ORDER BY c DESC, name LIMIT 10"))
    h = h.h
    return h - (1 << 32) if h >= 1 << 31 else h


if __name__ == "__main__":
    print(run(int(sys.argv[1]) if len(sys.argv) > 1 else 2))
