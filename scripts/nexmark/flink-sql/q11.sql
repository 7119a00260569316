SELECT B.bidder, count(*) AS bid_count,
  SESSION_START(B.event_time, INTERVAL '10' SECOND),
  SESSION_END(B.event_time, INTERVAL '10' SECOND)
FROM bid B
GROUP BY B.bidder, SESSION(B.event_time, INTERVAL '10' SECOND)
