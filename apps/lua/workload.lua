-- loopbench Lua workload: a little of what Lua programs do, deterministic.
-- bench(n) runs n steps and returns a 31-bit checksum of everything computed.

local function lcg(s) return (s * 1103515245 + 12345) % 2147483648 end

local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
function Vec.__add(a, b) return Vec.new(a.x + b.x, a.y + b.y) end
function Vec:dot(o) return self.x * o.x + self.y * o.y end

local words = { "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta" }

local function step(i, seed)
  -- tables: fill, sort, sum
  local t = {}
  local s = seed
  for k = 1, 200 do
    s = lcg(s)
    t[k] = s % 1000
  end
  table.sort(t)
  local acc = 0
  for k = 1, #t, 7 do acc = acc + t[k] * k end

  -- strings: build, format, pattern match
  local parts = {}
  for k = 1, 30 do
    parts[#parts + 1] = string.format("%s=%d", words[(s + k) % 8 + 1], (s >> (k % 16)) % 100)
    s = lcg(s)
  end
  local line = table.concat(parts, ";")
  local n = 0
  for key, val in line:gmatch("(%a+)=(%d+)") do
    n = n + #key * tonumber(val)
  end
  local up = line:sub(1, 40):upper():gsub("A", "4")

  -- closures and metatables
  local v = Vec.new(0, 0)
  for k = 1, 50 do
    v = v + Vec.new(k % 7, (k * i) % 11)
  end
  local counter = 0
  local function bump(d) counter = counter + d; return counter end
  for k = 1, 40 do bump(k & 3) end

  -- a string-keyed table (hash part)
  local h = {}
  for k = 1, 60 do
    local key = words[k % 8 + 1] .. (k % 13)
    h[key] = (h[key] or 0) + k
  end
  local hs = 0
  for _, val in pairs(h) do hs = hs + val end

  return (acc + n * 3 + #up + v:dot(Vec.new(3, 5)) + counter + hs) % 2147483647, s
end

function bench(n)
  local sum, seed = 0, 12345
  for i = 1, n do
    local r
    r, seed = step(i, seed)
    sum = (sum * 31 + r) % 2147483647
  end
  return sum
end
