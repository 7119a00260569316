SELECT B.auction, B.price, B.bidder, B.event_time, B.extra
FROM bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS event_time
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(event_time), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.event_time BETWEEN B1.event_time - INTERVAL '10' SECOND AND B1.event_time
