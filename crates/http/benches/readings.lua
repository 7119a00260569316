-- wrk script: POSTs 100 sensor-data readings per request, as newline-delimited JSON, to the
-- HTTP variant of the sensor-data example (its `ingress-lines`, port 3004).
--   wrk -t2 -c16 -d20s --latency -s crates/http/benches/readings.lua http://127.0.0.1:3004/
wrk.method = "POST"

-- The ids of the sensor-data generator's devices 0 to 3, which spread over the partitions.
local devices = {
    "63cbe1e4-5932-4dd7-b23c-2419f251fb29",
    "3d19e9b1-b066-4019-aa31-f77f840b3262",
    "33548c24-002a-4c2d-a305-56c0310edb14",
    "99df7cb6-a692-4640-b265-9288b76ff538",
}
wrk.headers["Content-Type"] = "application/x-ndjson"

local lines = {}
for sequence = 1, 100 do
    lines[sequence] = string.format(
        '{"device_id": "%s", "timestamp": %d, "sequence": %d, '
            .. '"measurements": {"power": 1700.5, "rotor_speed": 13.2, "wind_speed": 9.1}}',
        devices[sequence % 4 + 1], 1700000000000 + sequence, sequence)
end
wrk.body = table.concat(lines, "\n") .. "\n"

done = function(summary, latency, requests)
    io.write(string.format("non-2xx answers: %d\n", summary.errors.status))
end
