-- wrk.lua: GET /v1/keyword over every 7th keyword of KW_KEYWORDS (one a
-- line) with the paid key KW_KEY, in file order, round robin per thread.
-- serve/bench.sh runs `wrk -t1 -c32 --latency -s wrk.lua` against kwdata
-- and the baseline.
local paths = {}
local i = 0
for line in io.lines(os.getenv("KW_KEYWORDS")) do
	if i % 7 == 0 then
		local q = line:gsub("([^%w%-%._~ ])", function(c)
			return string.format("%%%02X", string.byte(c))
		end)
		q = q:gsub(" ", "+")
		paths[#paths + 1] = "/v1/keyword?q=" .. q
	end
	i = i + 1
end
local headers = { ["Authorization"] = "Bearer " .. os.getenv("KW_KEY") }
local n = 0

request = function()
	n = n % #paths + 1
	return wrk.format("GET", paths[n], headers)
end

-- wrk counts answers other than 2xx and 3xx; any would make the figures
-- meaningless.
done = function(summary, latency, requests)
	io.write(string.format("wrk_non2xx=%d\n", summary.errors.status))
end
