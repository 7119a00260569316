-- wrk script: POSTs one sensor-data reading per request, as JSON, to the HTTP variant of
-- the sensor-data example (its `ingress`, port 3003). Each thread numbers its own readings.
--   wrk -t2 -c64 -d20s --latency -s crates/http/benches/reading.lua http://127.0.0.1:3003/
wrk.method = "POST"

-- The ids of the sensor-data generator's devices 0 to 3, which spread over the partitions.
local devices = {
    "63cbe1e4-5932-4dd7-b23c-2419f251fb29",
    "3d19e9b1-b066-4019-aa31-f77f840b3262",
    "33548c24-002a-4c2d-a305-56c0310edb14",
    "99df7cb6-a692-4640-b265-9288b76ff538",
}
wrk.headers["Content-Type"] = "application/json"

local sequence = 0

request = function()
    sequence = sequence + 1
    local body = string.format(
        '{"device_id": "%s", "timestamp": %d, "sequence": %d, '
            .. '"measurements": {"power": 1700.5, "rotor_speed": 13.2, "wind_speed": 9.1}}',
        devices[sequence % 4 + 1], 1700000000000 + sequence, sequence)
    return wrk.format(nil, nil, nil, body)
end


done = function(summary, latency, requests)
    io.write(string.format("non-2xx answers: %d\n", summary.errors.status))
end
